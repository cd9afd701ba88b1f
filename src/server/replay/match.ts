// How a live request or frame is matched to a recorded one: as JSON, field by field, where a
// placeholder stands for whatever the live side put in its place and the fields that differ
// from run to run on the client's side are not compared.
import { parseIsoDateTime } from '../../protocol/dates.js';
import type { Json, RecordedBody } from '../../protocol/recording.js';

/** What the client makes anew on every run: never compared (PROTOCOL.md B9). */
const CLIENT_MADE = ['requestId', 'idempotencyKey'];
/** A place a secret was in at recording: `<key-1>`, `<upload-2>`. */
export const PLACEHOLDER = /<(?:key|upload)-\d+>/g;
/** The most differences a miss reports: enough to see why, not a dump of a large frame. */
const MAX_DIFFERENCES = 8;

/** Fields left out of comparisons: a name is left out at any depth, a dotted path (`data.meta.at`) from the top only. */
export class IgnoredFields {
  readonly #names: Set<string>;
  readonly #paths: Set<string>;

  constructor(given: readonly string[], extraPaths: readonly string[] = []) {
    const all = [...CLIENT_MADE, ...given];
    this.#names = new Set(all.filter((field) => !field.includes('.')));
    this.#paths = new Set([...all.filter((field) => field.includes('.')), ...extraPaths]);
  }

  /** The same fields, and these paths too (graphql-ws's `id`, the client's own numbering). */
  withPaths(paths: readonly string[]): IgnoredFields {
    return new IgnoredFields([...this.#names, ...this.#paths], paths);
  }

  has(name: string, path: string): boolean {
    return this.#names.has(name) || this.#paths.has(path);
  }
}

/**
 * What the live side put in place of each placeholder of a recorded string (at least one
 * character each), or undefined when it does not fit. By plain search, not a regular
 * expression: a recorded string with many placeholders against a long live one must not
 * backtrack without end. Each literal part is taken at its first place after the last, which
 * leaves the most room for the rest, so a fit is never missed.
 */
function placeholderValues(recorded: string, live: string): string[] | undefined {
  const parts = recorded.split(PLACEHOLDER);
  const first = parts[0]!;
  const last = parts.at(-1)!;
  if (!live.startsWith(first)) return undefined;
  const values: string[] = [];
  let at = first.length;
  for (const part of parts.slice(1, -1)) {
    const found = live.indexOf(part, at + 1);
    if (found === -1) return undefined;
    values.push(live.slice(at, found));
    at = found + part.length;
  }
  const end = live.length - last.length;
  if (end < at + 1 || !live.endsWith(last)) return undefined;
  values.push(live.slice(at, end));
  return values;
}

/** Whether a live string is what was recorded, a placeholder standing for anything in its place. */
export function fitsRecorded(recorded: string, live: string): boolean {
  return recorded.includes('<') && recorded.search(PLACEHOLDER) >= 0
    ? placeholderValues(recorded, live) !== undefined
    : recorded === live;
}

/** Notes what the live side put in place of each placeholder of a recorded value (a key it presented). */
export function bindPlaceholders(recorded: Json | undefined, live: unknown, bound: Map<string, string>): void {
  if (typeof recorded === 'string' && typeof live === 'string') {
    const names = recorded.includes('<') ? (recorded.match(PLACEHOLDER) ?? []) : [];
    if (names.length === 0) return;
    const values = placeholderValues(recorded, live);
    names.forEach((name, i) => {
      const value = values?.[i];
      if (value !== undefined && !bound.has(name)) bound.set(name, value);
    });
  } else if (Array.isArray(recorded) && Array.isArray(live)) {
    recorded.forEach((item, i) => bindPlaceholders(item, live[i], bound));
  } else if (isObject(recorded) && isObject(live)) {
    for (const [name, item] of Object.entries(recorded)) bindPlaceholders(item, live[name], bound);
  }
}

const isTime = (text: string) => /^\d{4}-\d\d-\d\dT/.test(text) && parseIsoDateTime(text) !== undefined;

const joinPath = (path: string, name: string) => (path === '' ? name : `${path}.${name}`);

/**
 * Where a live value differs from the recorded one (`data.streamIds[1]`; '' is the whole
 * value), up to MAX_DIFFERENCES places. Two date-times are the same: the client makes its
 * own timestamps from its own clock.
 */
export function differences(recorded: Json | undefined, live: unknown, ignored: IgnoredFields): string[] {
  const found: string[] = [];
  compare(recorded, live, ignored, '', found);
  return found;
}

function compare(
  recorded: Json | undefined,
  live: unknown,
  ignored: IgnoredFields,
  path: string,
  found: string[],
): void {
  if (found.length >= MAX_DIFFERENCES) return;
  if (typeof recorded === 'string' && typeof live === 'string') {
    if (!fitsRecorded(recorded, live) && !(isTime(recorded) && isTime(live))) found.push(path);
    return;
  }
  if (Array.isArray(recorded) && Array.isArray(live)) {
    const length = Math.max(recorded.length, live.length);
    for (let i = 0; i < length; i += 1) compare(recorded[i], live[i], ignored, `${path}[${i}]`, found);
    return;
  }
  if (isObject(recorded) && isObject(live)) {
    for (const name of new Set([...Object.keys(recorded), ...Object.keys(live)])) {
      const at = joinPath(path, name);
      if (!ignored.has(name, at)) compare(recorded[name], live[name], ignored, at, found);
    }
    return;
  }
  if (recorded !== live) found.push(path);
}

export function isObject(value: unknown): value is Record<string, Json> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A live text frame or body as the recording would hold it: parsed JSON where it parses. */
export function asRecorded(text: string): RecordedBody {
  try {
    return { json: JSON.parse(text) as Json };
  } catch {
    return { text };
  }
}

/**
 * Where a live body differs from a recorded one (`[]`: the same); `within` names where the body
 * is (`body` of a request) before each place. Ignored paths count from the body's top either way.
 */
export function bodyDifferences(
  recorded: RecordedBody | undefined,
  live: RecordedBody | undefined,
  ignored: IgnoredFields,
  within = '',
): string[] {
  const whole = [within || 'the frame'];
  if (recorded === undefined || live === undefined) return recorded === live ? [] : whole;
  if ('json' in recorded && 'json' in live)
    return differences(recorded.json, live.json, ignored).map((path) =>
      path === '' ? whole[0]! : within ? `${within}.${path}` : path,
    );
  if ('text' in recorded && 'text' in live) return fitsRecorded(recorded.text, live.text) ? [] : whole;
  if ('base64' in recorded && 'base64' in live) return recorded.base64 === live.base64 ? [] : whole;
  return whole;
}

/** Where a live query differs from a recorded one, in any order of names (a name's values in their order). */
export function queryDifferences(recorded: readonly [string, string][], live: readonly [string, string][]): string[] {
  const byName = (pairs: readonly [string, string][]) => {
    const map = new Map<string, string[]>();
    for (const [name, value] of pairs) map.set(name, [...(map.get(name) ?? []), value]);
    return map;
  };
  const want = byName(recorded);
  const got = byName(live);
  const found: string[] = [];
  for (const name of new Set([...want.keys(), ...got.keys()])) {
    const a = want.get(name) ?? [];
    const b = got.get(name) ?? [];
    if (a.length !== b.length || a.some((value, i) => !fitsRecorded(value, b[i]!))) found.push(`query.${name}`);
  }
  return found;
}

/** Of several candidates, the one with the fewest differences (the first of equals); undefined when none. */
export function closest<T>(
  candidates: Iterable<T>,
  differ: (candidate: T) => string[],
): { best: T; differ: string[] } | undefined {
  let found: { best: T; differ: string[] } | undefined;
  for (const candidate of candidates) {
    const fields = differ(candidate);
    if (found === undefined || fields.length < found.differ.length) found = { best: candidate, differ: fields };
    if (fields.length === 0) break;
  }
  return found;
}

/** A body as a log line or an answer shows it: its JSON or text, or how many bytes. */
export function bodyShown(body: RecordedBody | undefined, hide?: (text: string) => string): string {
  if (body === undefined) return '(none)';
  if ('base64' in body) return `${Buffer.byteLength(body.base64, 'base64')} bytes`;
  return shown('json' in body ? body.json : body.text, hide);
}

/** A recorded or live value shown in a log line or an answer: short, and never a live key (`hide`). */
function shown(value: unknown, hide: (text: string) => string = (text) => text, limit = 300): string {
  const text = hide(typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value)));
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}
