// Writing a recording: the `--record-redact` fields replaced, then the last scan of everything
// that would be written for every secret seen, then temp file and rename. A secret found
// anywhere fails the save, naming the place (never the value), and nothing is written.
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import type { Recording } from '../../protocol/recording.js';
import { secretScrubber } from '../../protocol/redact.js';
import { parseJsonPath, replaceAtPath } from './json-path.js';

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

/** Where in `value` a string (or a field's name) holds a secret, as a JSON path; undefined when none does. */
function placeOfSecret(value: unknown, holds: (text: string) => boolean, path = '$'): string | undefined {
  if (typeof value === 'string') return holds(value) ? path : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      const found = placeOfSecret(value[index], holds, `${path}[${index}]`);
      if (found) return found;
    }
    return undefined;
  }
  for (const [name, inner] of Object.entries(value)) {
    const at = /^[A-Za-z_$][\w$]*$/.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`;
    if (holds(name)) return `${at} (the field's name)`;
    const found = placeOfSecret(inner, holds, at);
    if (found) return found;
  }
  return undefined;
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
  for (const { value, placeholder } of secrets) {
    const scrub = secretScrubber([value], '');
    const escaped = JSON.stringify(value).slice(1, -1);
    const holds = (string: string) => scrub(string) !== string || JSON.stringify(string).includes(escaped);
    const place = placeOfSecret(recording, holds);
    if (place) throw new SecretInRecordingError(place, placeholder);
    // Belt and braces: the bytes to be written, in the forms a reader of the file would meet.
    if ([value, escaped, encodeURIComponent(value)].some((form) => text.includes(form)))
      throw new SecretInRecordingError('the serialized file', placeholder);
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
