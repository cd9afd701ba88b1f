/**
 * bench/render — the slowest a post can be to show: every adversarial 64 KiB
 * markdown shape we could construct (deep blockquotes and lists, runs of every
 * delimiter marked treats specially, tables at the guard's limit, fences,
 * entities, links), rendered the way `listen` and `tree` show a post on a colour
 * terminal with hyperlinks (src/render/body.ts formatBodyText with the markdown
 * renderer). Target: the worst shape's median render <= 50 ms (wall time); its
 * CPU time (what the render budget counts) and the slowest single render are
 * reported beside it.
 *
 * Baselines from the same run, same renderer: a typical 64 KiB prose markdown
 * post, and a 64 KiB rawtext post (the plain-text path, no marked).
 *
 * The render modules are bundled from src/ with esbuild (as the CLI's build
 * does) into a temporary file. One renderer serves every shape, as in one
 * `listen` process; each shape gets --warmup renders, then --runs timed ones.
 *
 * Flags (through bench/run.mjs): --runs (timed renders per shape, default 15),
 * --warmup (default 3).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { readFlags } from './lib/config.mjs';
import { REPO_ROOT } from './lib/processes.mjs';
import { comparison, median, round } from './lib/stats.mjs';

const DEFAULTS = { runs: 15, warmup: 3 };
const SIZE = 64 * 1024;

/** `unit` repeated to exactly SIZE characters (all shapes are ASCII: characters are bytes). */
const fill = (unit) => unit.repeat(Math.ceil(SIZE / unit.length)).slice(0, SIZE);
/** `prefix`, then prose to SIZE characters. */
const padded = (prefix) => prefix + fill('word ').slice(0, SIZE - prefix.length);
const lines = (count, line) => Array.from({ length: count }, (_, index) => line(index)).join('\n');

const PROSE_PARAGRAPH =
  'The **Federal Reserve** held rates steady on Wednesday, citing _persistent_ inflation in services; ' +
  'see [the statement](https://example.org/fomc) and `FEDFUNDS`. Markets moved $BTC and $ETH modestly.\n\n';

/** Shapes found by trying what marked and marked-terminal do per character class; each SIZE characters. */
const ADVERSARIAL = {
  'blockquote markers': fill('>'),
  'spaced blockquote markers': fill('> '),
  'blockquotes at the nesting limit': fill(`${'> '.repeat(16)}quoted text\n`),
  'list markers on one line': fill('- '),
  'indented list staircase': fill(lines(200, (index) => `${'  '.repeat(index % 16)}- item ${index}`) + '\n'),
  'emphasis *a _': fill('*a _'),
  'emphasis _a *': fill('_a *'),
  'strong **a __': fill('**a __'),
  'emphasis in words a*b_c': fill('a*b_c '),
  'asterisk run': fill('*'),
  'underscore run': fill('_'),
  'tilde run': fill('~'),
  'backtick run': fill('`'),
  'backticks of growing length': fill(lines(300, (index) => `${'`'.repeat(index % 40)}x`) + '\n'),
  'open brackets': fill('['),
  'open links [a](': fill('[a]('),
  'image openers ![': fill('!['),
  'brackets and parens [(': fill('[('),
  'angle brackets <': fill('<'),
  'html openers <a ': fill('<a '),
  backslashes: fill('\\'),
  'entities &#x1b;': fill('&#x1b;'),
  pipes: fill('|'),
  // The guard allows 400 pipes in a post: the largest tables that are still drawn.
  'table at the pipe limit': padded(
    `| a | b | c | d |\n|---|---|---|---|\n${'| 1 | **2** | _3_ | `4` |\n'.repeat(78)}\n`,
  ),
  'wide table at the pipe limit': padded(`${'|a'.repeat(199)}|\n${'|-'.repeat(199)}|\n\n`),
  'code fences': fill('```\nx\n'),
  'one long fence': `\`\`\`js\n${fill('const x = 1; // comment\n').slice(0, SIZE - 10)}\n\`\`\``,
  headings: fill('# heading\n'),
  'setext headings': fill('a\n===\n'),
  autolinks: fill('https://a.example/x '),
  'www links': fill('www.a.example '),
  'link references': fill('[a]: https://a.example\n[a] '),
  'links whose text is a URL': fill('[https://good.example](https://evil.example) '),
  'task list items': fill('- [ ] task\n'),
  'emoji codes': fill(':smile: '),
  'one word, no spaces': fill('a'),
  'combining marks': fill('a\u0301\u0302\u0303'),
  'mixed delimiters': fill('*_[`|>~<!\\-'),
};

const BASELINES = {
  prose: fill(PROSE_PARAGRAPH),
  rawtext: fill('word '),
};

async function loadRenderModules(dir) {
  const outfile = join(dir, 'render.mjs');
  await build({
    stdin: {
      contents:
        "export { formatBodyText } from './src/render/body.ts'; export { loadMarkdownRenderer } from './src/render/markdown.ts'; export { createChalk } from './src/render/style.ts';",
      resolveDir: REPO_ROOT,
      loader: 'ts',
    },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);",
    },
  });
  return import(pathToFileURL(outfile).href);
}

function measure(render, text, { runs, warmup }) {
  let output = '';
  for (let index = 0; index < warmup; index++) output = render(text);
  const times = [];
  const cpuTimes = [];
  for (let index = 0; index < runs; index++) {
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    output = render(text);
    times.push(performance.now() - started);
    const cpu = process.cpuUsage(cpuBefore);
    cpuTimes.push((cpu.user + cpu.system) / 1000);
  }
  const note = /^(?:\u001B\[[0-9;]*m)*\(shown as plain text: ([^)]*)\)/.exec(output)?.[1];
  return {
    medianMs: round(median(times)),
    maxMs: round(Math.max(...times)),
    cpuMedianMs: round(median(cpuTimes)),
    plainTextBecause: note ?? null,
  };
}

export async function run(options = {}) {
  const config = readFlags(options.flags, DEFAULTS, { whole: true, zero: ['warmup'] });
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const dir = await mkdtemp(join(tmpdir(), 'stream-posts-bench-render-'));
  try {
    const { formatBodyText, loadMarkdownRenderer, createChalk } = await loadRenderModules(dir);
    const markdown = await loadMarkdownRenderer({ color: true, width: 100, hyperlinks: true });
    const view = { color: true, hyperlinks: true, markdown };
    const c = createChalk(true);
    const asMarkdown = (text) => formatBodyText(text, true, view, c);
    const asRawtext = (text) => formatBodyText(text, false, view, c);

    const shapes = {};
    for (const [name, text] of Object.entries(ADVERSARIAL)) {
      if (text.length !== SIZE) throw new Error(`shape "${name}" is ${text.length} characters, not ${SIZE}`);
      shapes[name] = measure(asMarkdown, text, config);
      log(
        `  ${name}: median ${shapes[name].medianMs} ms, slowest ${shapes[name].maxMs} ms${shapes[name].plainTextBecause ? ` (plain text: ${shapes[name].plainTextBecause})` : ''}`,
      );
    }
    const prose = measure(asMarkdown, BASELINES.prose, config);
    const rawtext = measure(asRawtext, BASELINES.rawtext, config);
    log(
      `  baseline prose: median ${prose.medianMs} ms, slowest ${prose.maxMs} ms; rawtext: median ${rawtext.medianMs} ms`,
    );

    const slowest = (key) => Object.entries(shapes).reduce((a, b) => (b[1][key] > a[1][key] ? b : a));
    const [worstName, worst] = slowest('medianMs');
    const [slowestName, slowestOnce] = slowest('maxMs');
    const [cpuName, cpuWorst] = slowest('cpuMedianMs');
    return {
      name: 'render',
      figures: [
        comparison(
          '64 KiB prose markdown',
          `worst 64 KiB post, median render (${worstName})`,
          'ms',
          worst.medianMs,
          prose.medianMs,
          {
            target: '<= 50 ms',
            met: worst.medianMs <= 50,
          },
        ),
        // CPU time is what the render budget counts; unlike wall time, others' work on the machine does not add to it.
        comparison(
          '64 KiB prose markdown',
          `worst 64 KiB post, CPU time per render, median (${cpuName})`,
          'ms',
          cpuWorst.cpuMedianMs,
          prose.cpuMedianMs,
        ),
        // One render is one sample: a garbage collection or a stolen time slice lands in it whole.
        comparison(
          '64 KiB prose markdown',
          `slowest single render of any shape (${slowestName})`,
          'ms',
          slowestOnce.maxMs,
          prose.maxMs,
        ),
        comparison(
          '64 KiB prose markdown',
          '64 KiB rawtext post (no markdown), median',
          'ms',
          rawtext.medianMs,
          prose.medianMs,
        ),
      ],
      notes: `${Object.keys(shapes).length} adversarial shapes of ${SIZE} characters, ${config.runs} timed renders each after ${config.warmup} warm-up; per shape in results.json (shapes).`,
      config,
      shapes,
      baselines: { prose, rawtext },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
