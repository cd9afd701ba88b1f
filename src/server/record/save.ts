// Writing a recording: the `--record-redact` fields replaced, then the last scan of everything
// that would be written for every secret seen, then temp file and rename. A secret found
// anywhere fails the save, naming the place (never the value), and nothing is written.
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import type { Recording } from '../../protocol/recording.js';
import { secretScrubber } from '../../protocol/redact.js';
import { parseJsonPath, replaceAtPath } from './json-path.js';
import { ESCAPED } from './secrets.js';

/** What a `--record-redact` field becomes. */
export const REDACTED_FIELD = '<redacted>';

export class SecretInRecordingError extends Error {
  constructor(
    /** The JSON path of the place (`$.requests[0].response.body.json[1].name`). */
    readonly place: string,
    /** The placeholder the secret would have had (`<key-2>`), never the value. */
    readonly placeholder: string,
  ) {
    super(
      `the recording was not saved: ${place} holds the secret ${placeholder} in a place no redaction covered (it appeared before it was known as a secret, or where no key is expected); nothing was written`,
    );
  }
}

/**
 * One line per event and per exchange, the rest indented: a reader follows a connection down
 * the file, and two recordings diff line by line.
 */
export function serializeRecording(recording: Recording): string {
  const lines = ['{', `  "meta": ${JSON.stringify(recording.meta, null, 2).replaceAll('\n', '\n  ')},`];
  lines.push('  "connections": [');
  recording.connections.forEach((connection, index) => {
    const comma = index < recording.connections.length - 1 ? ',' : '';
    const { events, ...head } = connection;
    const opening = `    ${JSON.stringify(head).slice(0, -1)},"events":[`;
    if (events.length === 0) {
      lines.push(`${opening}]}${comma}`);
      return;
    }
    lines.push(opening);
    events.forEach((event, at) => lines.push(`      ${JSON.stringify(event)}${at < events.length - 1 ? ',' : ''}`));
    lines.push(`    ]}${comma}`);
  });
  lines.push('  ],', '  "requests": [');
  recording.requests.forEach((exchange, index) =>
    lines.push(`    ${JSON.stringify(exchange)}${index < recording.requests.length - 1 ? ',' : ''}`),
  );
  lines.push('  ]', '}', '');
  return lines.join('\n');
}

/** Applies `--record-redact` paths; returns how many places each replaced. */
export function redactFields(recording: Recording, paths: readonly string[]): { path: string; count: number }[] {
  return paths.map((path) => ({ path, count: replaceAtPath(recording, parseJsonPath(path), REDACTED_FIELD) }));
}

/**
 * Where in `value` a string (or a field's name) holds a secret: its JSON path and the string;
 * undefined when none does. The path is written out only for the place found (`at` holds its
 * steps meanwhile): a recording has millions of strings.
 */
function placeOfSecret(
  value: unknown,
  holds: (text: string) => boolean,
  at: (string | number)[] = [],
  clean = new WeakSet<object>(),
): { path: string; text: string } | undefined {
  if (typeof value === 'string') return holds(value) ? { path: jsonPath(at), text: value } : undefined;
  // A post fanned out to many connections is one object in many places: looked through once.
  if (value === null || typeof value !== 'object' || clean.has(value)) return undefined;
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : Object.entries(value);
  for (const [name, inner] of entries) {
    at.push(name);
    const found =
      typeof name === 'string' && holds(name)
        ? { path: `${jsonPath(at)} (the field's name)`, text: name }
        : placeOfSecret(inner, holds, at, clean);
    at.pop();
    if (found) return found;
  }
  clean.add(value);
  return undefined;
}

function jsonPath(steps: readonly (string | number)[]): string {
  return steps
    .map((step) =>
      typeof step === 'number'
        ? `[${step}]`
        : /^[A-Za-z_$][\w$]*$/.test(step)
          ? `.${step}`
          : `[${JSON.stringify(step)}]`,
    )
    .reduce((path, step) => path + step, '$');
}

/** Whether `text` holds `values`: plain (a native search), escaped (the scrubber, only where escapes are), or JSON-escaped. */
function holderOf(values: readonly string[]): (text: string) => boolean {
  const scrub = secretScrubber(values, '');
  const jsonEscaped = values.map((value) => JSON.stringify(value).slice(1, -1)).filter((form, i) => form !== values[i]);
  return (text) =>
    values.some((value) => text.includes(value)) ||
    (ESCAPED.test(text) && scrub(text) !== text) ||
    (jsonEscaped.length > 0 && jsonEscaped.some((form) => JSON.stringify(text).includes(form)));
}

/**
 * The last scan: every secret, plain, percent-encoded (once or twice, any case) or JSON-escaped,
 * in every string of the document and in the text about to be written. Throws
 * SecretInRecordingError naming the first place found.
 */
export function checkNoSecret(
  recording: Recording,
  text: string,
  secrets: readonly { value: string; placeholder: string }[],
): void {
  if (secrets.length === 0) return;
  const found = placeOfSecret(recording, holderOf(secrets.map(({ value }) => value)));
  if (found) {
    const secret = secrets.find(({ value }) => holderOf([value])(found.text))!;
    throw new SecretInRecordingError(found.path, secret.placeholder);
  }
  // Belt and braces: the bytes to be written, in the forms a reader of the file would meet.
  for (const { value, placeholder } of secrets) {
    const forms = [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)];
    if (forms.some((form) => text.includes(form))) throw new SecretInRecordingError('the serialized file', placeholder);
  }
}

/** Writes `text` to `file` whole or not at all: a temporary file beside it, then a rename. */
export async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, text, { flag: 'wx', mode: 0o600 });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
