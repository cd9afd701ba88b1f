import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

/** Every module of src/ (the dashboard's page is a bundle of its own) and what it imports at run time. */
function importGraph(): Map<string, string[]> {
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
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    // `import type` is erased at build time: only imports that load code can close a circle.
    const specifiers = [
      ...[...text.matchAll(/^(?:import|export)\s+(?!type\b)[^'"]*?from\s+'(\.[^']+)'/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/import\('(\.[^']+)'\)/g)].map((m) => m[1]!),
    ];
    const targets = specifiers.map((specifier) => resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
    graph.set(
      relative(SRC, file),
      targets.filter((target) => files.includes(target)).map((target) => relative(SRC, target)),
    );
  }
  return graph;
}

/** The strongly connected groups of more than one module: each is an import circle. */
function circles(graph: Map<string, string[]>): string[][] {
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

describe('the source layout', () => {
  const graph = importGraph();

  it('has no import circles', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('keeps the command line on top: nothing outside src/cli/ imports from it', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      file.startsWith('cli/') ? [] : targets.filter((target) => target.startsWith('cli/')).map((t) => `${file} → ${t}`),
    );
    expect(upward).toEqual([]);
  });

  it('keeps the command line on the public library: src/cli/ imports only api/, protocol/, render/, demo/, terminal/ and itself', () => {
    const allowed = ['cli/', 'api/', 'protocol/', 'render/', 'demo/', 'terminal/'];
    // The terminal command is being moved with the terminal room; it still takes one helper from client/.
    const pending = new Set(['cli/commands/terminal.ts → client/cli-words.ts']);
    const below = [...graph].flatMap(([file, targets]) =>
      file.startsWith('cli/')
        ? targets
            .filter((target) => !allowed.some((room) => target.startsWith(room)))
            .map((target) => `${file} → ${target}`)
            .filter((edge) => !pending.has(edge))
        : [],
    );
    expect(below).toEqual([]);
  });
});
