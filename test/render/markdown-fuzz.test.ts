import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatBodyText, type TextView } from '../../src/render/body.js';
import { loadMarkdownRenderer } from '../../src/render/markdown.js';
import { createChalk } from '../../src/render/style.js';

const SEED = 20261123;
const RUNS = 150;

// What rendering may leave in its output: colours and OSC 8 hyperlinks. Nothing else may control the terminal.
const STYLING = /\u001B\[[0-9;]*m|\u001B\]8;[^\u0000-\u001F\u007F-\u009F]*\u0007/g;
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/;

const piece = fc.oneof(
  fc.constantFrom(
    '*',
    '_',
    '**',
    '__',
    '~~',
    '>',
    '> ',
    '[',
    ']',
    '(',
    ')',
    '![',
    '-',
    '- ',
    '+ ',
    '1. ',
    '|',
    '`',
    '```',
    '~~~',
    '\\',
    '<',
    '<a href="x">',
    '#',
    '\n',
    '\n\n',
    '  ',
    '\t',
    '&#x1b;',
    '&#155;',
    '&amp;',
    ':smile:',
    'https://a.example/x',
    'www.b.example',
    '[https://good.example](https://evil.example)',
    '[a]: https://c.example',
    '---',
    '===',
    '- [ ] ',
  ),
  fc.string({ maxLength: 8 }),
  fc.constantFrom(
    '\u001B]0;title\u0007',
    '\u001B[2J',
    '\u009B2J',
    '\u001B]52;c;QQ==\u0007',
    '\u202E',
    '\u200B',
    '\r\n',
    '\u0000',
  ),
);

/** Markdown-shaped text: fragments, long runs of one delimiter, deep nesting, tables and fences. */
const markdownText = fc.oneof(
  fc.array(piece, { maxLength: 120 }).map((parts) => parts.join('')),
  fc
    .tuple(
      fc.constantFrom('*', '_', '>', '[', '-', '|', '`', '> ', '- ', '*a _', '[a](', '!['),
      fc.integer({ min: 1, max: 6000 }),
    )
    .map(([unit, count]) => unit.repeat(count)),
  fc
    .tuple(fc.integer({ min: 1, max: 40 }), fc.constantFrom('> ', '- ', '  - ', '1. '), fc.string({ maxLength: 20 }))
    .map(([depth, marker, text]) => `${marker.repeat(depth)}${text}\n`.repeat(5)),
  fc
    .tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 60 }), fc.array(piece, { maxLength: 4 }))
    .map(([columns, rows, cell]) => {
      const row = (text: string) => `|${` ${text} |`.repeat(columns)}\n`;
      return row('h') + `|${'---|'.repeat(columns)}\n` + row(cell.join('')).repeat(rows);
    }),
  fc
    .tuple(
      fc.constantFrom('```', '~~~', '````'),
      fc.constantFrom('', 'js', 'json', 'nope'),
      fc.array(piece, { maxLength: 40 }),
    )
    .map(([fence, lang, body]) => `${fence}${lang}\n${body.join('')}\n${fence}`),
);

describe('rendering any markdown-shaped text', () => {
  it('never throws, and leaves no control character but colours and hyperlinks', async () => {
    const views: TextView[] = [
      {
        color: true,
        hyperlinks: true,
        markdown: await loadMarkdownRenderer({ color: true, width: 80, hyperlinks: true }),
        match: /a/i,
      },
      { color: true, hyperlinks: false, markdown: await loadMarkdownRenderer({ color: true, width: 80 }) },
      { color: false, hyperlinks: false },
    ];
    fc.assert(
      fc.property(markdownText, fc.boolean(), (text, markdown) => {
        for (const view of views) {
          const shown = formatBodyText(text, markdown, view, createChalk(view.color));
          expect(typeof shown).toBe('string');
          expect(shown.replace(STYLING, '')).not.toMatch(CONTROL);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 120_000);
});
