import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const MAX_LINES = 500;
/** Source files past MAX_LINES that were looked at and are one job each, with why. */
const ONE_JOB: Record<string, string> = {
  'terminal/model.ts':
    "the terminal's state as keys and posts change it: buffer, selection, pause, search, filters and pins act on one another at each step (a release moves its post to the top and its pin with it, and counts in the selection's ↑ N new; a pause holds the selection), so they are one state, with the keys' mode and the list's scroll, and its types beside it; the rows worked out from it (shown-rows), the entries, the alert rules, the keys' bindings and the one entry that steps it (update.ts) are files of their own",
};

/** The files of src/cli/ and src/terminal/ that read process.*, and why; no command is one of them. */
const NEEDS_A_PROCESS: Record<string, string> = {
  'cli/main.ts': 'the entry: it builds the context from the process',
  'terminal/job-control.ts': "the terminal's Ctrl-Z stops this process's job, SIGCONT and SIGHUP are its signals",
  'cli/reader-watch.ts': "the pipe's watcher is tied to this process's id",
  'cli/serve-signals.ts': "serve's --exec command leads a process group that a stop signals as a whole",
  'cli/serve-workers.ts': "--workers: the cluster's channel between the primary and its worker processes",
  'cli/worker-peers.ts': "--workers: the workers' admin answers travel over the cluster's channel",
  'terminal/screen.ts': "the screen is given back on this process's exit, however it ends",
};

/** Every module of src/ (the dashboard's page is a bundle of its own). */
function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (relative(SRC, path) !== 'dashboard') walk(path);
      } else if (path.endsWith('.ts')) files.push(path);
    }
  };
  walk(SRC);
  return files;
}

/**
 * What each module imports, type-only imports included: a type that runs back up ties two
 * rooms as surely as a value does, even though the build erases it.
 */
function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const specifiers = [
      ...[...text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)].map((m) => m[1]!),
      ...[...text.matchAll(/^import\s+'(\.[^']+)'/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/import\('(\.[^']+)'\)/g)].map((m) => m[1]!),
    ];
    const targets = specifiers.map((specifier) => resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
    graph.set(relative(SRC, file), [
      ...new Set(targets.filter((target) => files.includes(target)).map((target) => relative(SRC, target))),
    ]);
  }
  return graph;
}

/** The stores' engines, each a room of its own beside the contract and shared rules of server/stores/. */
const ENGINES = ['server/stores/memory/', 'server/stores/redis/'];

/**
 * The room a module belongs to: a folder of src/ (cli/commands/ is cli's), a folder of
 * src/server/ (an engine of server/stores/ is a room of its own), or, for a file that sits
 * loose in src/ or src/server/, the file itself.
 */
export function roomOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return file;
  const engine = ENGINES.find((room) => file.startsWith(room));
  if (engine !== undefined) return engine;
  if (parts[0] === 'server') return parts.length === 2 ? file : `server/${parts[1]}/`;
  return `${parts[0]}/`;
}

/** The files that pick an engine, and so may import one (an engine's own files aside), with why. */
const ENGINE_PICKERS: Record<string, string> = {
  'server/assemble.ts': 'makes the memory store, or opens the Redis store the options name',
  'api/start-options.ts': "checks startServer's `store` option: memory, or a Redis URL",
  'api/serve-options.ts': "the `--redis-prefix` option's default, the Redis store's",
  'api/serve-support.ts': 'opens the Redis store once before `serve --workers` starts its workers',
};

/** The strongly connected groups of more than one node: each is an import circle. */
function circles(graph: Map<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(node, Math.min(low.get(node)!, index.get(target)!));
    }
    if (low.get(node) === index.get(node)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** The rooms and which rooms each imports, with the file-to-file imports behind every arrow. */
function roomGraph(graph: Map<string, string[]>): { rooms: Map<string, string[]>; why: Map<string, string[]> } {
  const rooms = new Map<string, Set<string>>();
  const why = new Map<string, string[]>();
  for (const [file, targets] of graph) {
    const from = roomOf(file);
    const arrows = rooms.get(from) ?? new Set<string>();
    rooms.set(from, arrows);
    for (const target of targets) {
      const to = roomOf(target);
      if (to === from) continue;
      arrows.add(to);
      why.set(`${from} → ${to}`, [...(why.get(`${from} → ${to}`) ?? []), `${file} → ${target}`]);
    }
  }
  return { rooms: new Map([...rooms].map(([room, arrows]) => [room, [...arrows]])), why };
}

/** What each room may import besides itself (docs/architecture.md says why). */
const MAY_IMPORT: Record<string, (room: string) => boolean> = {
  'protocol/': () => false,
  'render/': (room) => room === 'protocol/',
  'cli/': (room) => ['index.ts', 'api/', 'protocol/', 'render/', 'demo/', 'terminal/', 'doctor/'].includes(room),
  'doctor/': (room) => ['index.ts', 'api/', 'protocol/'].includes(room),
  'client/': (room) => room === 'protocol/',
  'demo/': (room) => ['index.ts', 'api/', 'protocol/'].includes(room),
  'terminal/': (room) => ['index.ts', 'api/', 'protocol/', 'render/'].includes(room),
  'index.ts': (room) => room === 'api/',
};

/** The library's two doors: the package's public entry, and the command line's internal one (not public). */
const LIBRARY_ENTRIES = ['index.ts', 'api/internal.ts'];
/** The rooms that stand on the library as its users do. */
const LIBRARY_USERS = ['cli/', 'demo/', 'terminal/', 'doctor/'];

/** Within the service: its rooms import protocol/ and one another, and these arrows never. */
const NEVER: ReadonlyArray<readonly [string, string]> = [
  ['server/http/', 'server/admin/'],
  ['server/admin/', 'server/http/'],
  ['server/ws/', 'server/admin/'],
  ['server/stores/', 'server/service/'],
  ['server/stores/memory/', 'server/service/'],
  ['server/stores/redis/', 'server/service/'],
  // The engines stand on the contract and the shared rules, each apart from the other.
  ['server/stores/memory/', 'server/stores/redis/'],
  ['server/stores/redis/', 'server/stores/memory/'],
  ['server/stores/', 'server/stores/memory/'],
  ['server/stores/', 'server/stores/redis/'],
];
const mayImport = (room: string, to: string): boolean => {
  if (room.startsWith('server/'))
    return (to === 'protocol/' || to.startsWith('server/')) && !NEVER.some(([a, b]) => a === room && b === to);
  return MAY_IMPORT[room]?.(to) ?? true;
};

describe('the source layout', () => {
  const files = sourceFiles();
  const graph = importGraph(files);
  const { rooms, why } = roomGraph(graph);

  it('has no circle of files, type-only imports included', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('has no circle of rooms (the folders of src/ and of src/server/)', () => {
    const found = circles(rooms).map((group) =>
      group.flatMap((from) => group.filter((to) => to !== from).flatMap((to) => why.get(`${from} → ${to}`) ?? [])),
    );
    expect(found).toEqual([]);
  });

  it('keeps every room to what it may import (cli/ stands on the public library)', () => {
    const strays = [...rooms].flatMap(([room, arrows]) =>
      arrows.filter((to) => !mayImport(room, to)).flatMap((to) => why.get(`${room} → ${to}`) ?? []),
    );
    expect(strays).toEqual([]);
  });

  it('has an engine imported only where one is picked', () => {
    const strays = [...graph].flatMap(([file, targets]) =>
      targets
        .filter((target) => ENGINES.includes(roomOf(target)) && roomOf(target) !== roomOf(file))
        .filter(() => !(file in ENGINE_PICKERS))
        .map((target) => `${file} → ${target}`),
    );
    expect(strays).toEqual([]);
    const pickers = new Set(
      [...graph].flatMap(([file, targets]) => (targets.some((t) => ENGINES.includes(roomOf(t))) ? [file] : [])),
    );
    expect(Object.keys(ENGINE_PICKERS).filter((file) => !pickers.has(file))).toEqual([]);
  });

  it('lets the command line into the library through its two entries only: src/index.ts and api/internal.ts', () => {
    const side = [...graph].flatMap(([file, targets]) =>
      LIBRARY_USERS.includes(roomOf(file))
        ? targets
            .filter((target) => target.startsWith('api/') && !LIBRARY_ENTRIES.includes(target))
            .map((target) => `${file} → ${target}`)
        : [],
    );
    expect(side).toEqual([]);
  });

  it('holds no pass-through file in api/: each module but the internal entry does work of its own', () => {
    const passThrough = files
      .filter((file) => relative(SRC, file).startsWith('api/') && relative(SRC, file) !== 'api/internal.ts')
      .filter((file) => {
        // What is left once comments, imports and re-exports are taken out.
        const text = readFileSync(file, 'utf8')
          .replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')
          .replace(/^(?:import|export)\s[^;]*?from\s+'[^']+';/gms, '');
        return text.trim() === '';
      })
      .map((file) => relative(SRC, file));
    expect(passThrough).toEqual([]);
  });

  it('keeps the command line on top: nothing outside src/cli/ imports from it', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      file.startsWith('cli/') ? [] : targets.filter((target) => target.startsWith('cli/')).map((t) => `${file} → ${t}`),
    );
    expect(upward).toEqual([]);
  });

  it('keeps process.* to the entry and the files that need a process, each saying why', () => {
    // A command is a function of its context (src/cli/command-context.ts): the entry hands it
    // the streams, the environment, the signals and the clock. Comments are left out.
    const uses = (file: string) =>
      readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')
        .match(/\bprocess\.[A-Za-z]/g)?.length ?? 0;
    const cli = files.filter((file) => /^(?:cli|terminal)\//.test(relative(SRC, file)));
    const commands = cli.filter((file) => relative(SRC, file).startsWith('cli/commands/'));
    expect(commands.filter((file) => uses(file) > 0).map((file) => relative(SRC, file))).toEqual([]);
    expect(cli.filter((file) => uses(file) > 0).map((file) => relative(SRC, file))).toEqual(
      Object.keys(NEEDS_A_PROCESS).sort(),
    );
    // Each of them says why in its own words too.
    for (const file of Object.keys(NEEDS_A_PROCESS))
      expect(readFileSync(join(SRC, file), 'utf8'), file).toMatch(/process\.\*|this (very )?process/);
  });

  it(`looks at every source file over ${MAX_LINES} lines: each is one job, and says so here`, () => {
    const long = files
      .map((file) => ({ file: relative(SRC, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file }) => file);
    // A file is split by job, never by count: past the mark it is looked at, and kept whole
    // only with the reason it is one job.
    expect(long.filter((file) => !(file in ONE_JOB))).toEqual([]);
    expect(Object.keys(ONE_JOB).filter((file) => !long.includes(file))).toEqual([]);
  });
});
