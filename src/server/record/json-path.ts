// The JSONPath subset `--record-redact` takes: `$`, `.name`, `['name']`, `[n]`, `[*]`, `.*`
// and `..name` (any depth). Enough to name a field of every frame (`$..author`) or of one
// place (`$.connections[*].events[*].json.data.author`); filters and slices are refused by name.

type Step = { kind: 'child' | 'deep'; name: string | number | '*' };

export class JsonPathError extends Error {}

const NAME = /^[A-Za-z_$][\w$-]*/;

/** Parses a path; a path outside the subset throws JsonPathError naming where it stopped making sense. */
export function parseJsonPath(path: string): Step[] {
  if (!path.startsWith('$')) throw new JsonPathError(`"${path}" must start with $`);
  const steps: Step[] = [];
  let rest = path.slice(1);
  while (rest !== '') {
    const deep = rest.startsWith('..');
    if (deep || rest.startsWith('.')) {
      rest = rest.slice(deep ? 2 : 1);
      if (rest.startsWith('*')) {
        steps.push({ kind: deep ? 'deep' : 'child', name: '*' });
        rest = rest.slice(1);
        continue;
      }
      if (deep && rest.startsWith('[')) {
        const [name, after] = bracket(path, rest);
        steps.push({ kind: 'deep', name });
        rest = after;
        continue;
      }
      const name = NAME.exec(rest)?.[0];
      if (name === undefined) throw new JsonPathError(`"${path}": expected a field name at "${rest}"`);
      steps.push({ kind: deep ? 'deep' : 'child', name });
      rest = rest.slice(name.length);
    } else if (rest.startsWith('[')) {
      const [name, after] = bracket(path, rest);
      steps.push({ kind: 'child', name });
      rest = after;
    } else throw new JsonPathError(`"${path}": expected . or [ at "${rest}"`);
  }
  if (steps.length === 0) throw new JsonPathError(`"${path}" names the whole document, not a field`);
  return steps;
}

function bracket(path: string, rest: string): [string | number | '*', string] {
  const match = /^\[(?:(\*)|(\d+)|'([^']*)'|"([^"]*)")\]/.exec(rest);
  if (!match)
    throw new JsonPathError(
      `"${path}": expected [*], [n] or ['name'] at "${rest}" (filters and slices are not supported)`,
    );
  const name = match[1] ?? (match[2] !== undefined ? Number(match[2]) : (match[3] ?? match[4]!));
  return [name, rest.slice(match[0].length)];
}

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return value !== null && typeof value === 'object';
}

function children(value: Container): [string | number, unknown][] {
  return Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
}

/** Replaces every value the path reaches in `root` by `replacement`; returns how many it replaced. */
export function replaceAtPath(root: unknown, steps: readonly Step[], replacement: string): number {
  let places: [Container, string | number][] = [];
  let current: unknown[] = [root];
  steps.forEach((step, index) => {
    const last = index === steps.length - 1;
    const found: [Container, string | number][] = [];
    const visit = (value: unknown, deep: boolean) => {
      if (!isContainer(value)) return;
      for (const [name, child] of children(value)) {
        if (step.name === '*' || step.name === name || (typeof step.name === 'number' && String(step.name) === name))
          found.push([value, name]);
        if (deep) visit(child, true);
      }
    };
    for (const value of current) visit(value, step.kind === 'deep');
    if (last) places = found;
    else current = found.map(([parent, name]) => (parent as Record<string | number, unknown>)[name]);
  });
  for (const [parent, name] of places) (parent as Record<string | number, unknown>)[name] = replacement;
  return places.length;
}
