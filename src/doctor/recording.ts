// `doctor --record FILE`: the run's exchanges with the service, as a recording `serve --replay`
// reads (PROTOCOL.md B9), the key replaced by its placeholder before anything is written.
import { rename, rm, writeFile } from 'node:fs/promises';
import packageJson from '../../package.json' with { type: 'json' };
import { secretScrubber } from '../protocol/redact.js';
import {
  keyPlaceholder,
  RECORDING_FORMAT,
  RECORDING_VERSION,
  type Json,
  type Recording,
} from '../protocol/recording.js';
import type { Exchanges } from './wire.js';

/** A secret was still found in the recording after redaction: where (never the value). */
export class SecretLeft extends Error {
  override name = 'SecretLeft';
}

/** Every string of a JSON value (object keys too) passed through `replace`. */
function mapStrings(value: unknown, replace: (text: string) => string): unknown {
  if (typeof value === 'string') return replace(value);
  if (Array.isArray(value)) return value.map((each) => mapStrings(each, replace));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, each]) => [replace(key), mapStrings(each, replace)]));
  return value;
}

/** The JSON path of the first string in which `leaks` finds a secret. */
function placeOf(value: unknown, leaks: (text: string) => boolean, path = '$'): string | undefined {
  if (typeof value === 'string') return leaks(value) ? path : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, each] of Object.entries(value)) {
    if (leaks(key)) return `${path} (a field name)`;
    const found = placeOf(each, leaks, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
}

/** The recording of a run against `origin` with `apiKey`, the key replaced everywhere. */
export function doctorRecording(
  exchanges: Exchanges,
  origin: string,
  apiKey: string,
  dialect: 'hosted' | 'stream-posts',
): Recording {
  const placeholder = keyPlaceholder(1);
  let count = 0;
  const scrub = secretScrubber([apiKey], placeholder);
  const replace = (text: string) => {
    const out = scrub(text);
    if (out !== text) count += 1;
    return out;
  };
  const connections = mapStrings(exchanges.connections, replace) as Recording['connections'];
  const requests = mapStrings(exchanges.requests, replace) as Recording['requests'];
  return {
    meta: {
      format: RECORDING_FORMAT,
      version: RECORDING_VERSION,
      recordedAt: new Date(exchanges.started).toISOString(),
      upstream: new URL(origin).origin,
      tool: { name: 'stream-posts', version: packageJson.version },
      dialect,
      redactions: [{ kind: 'api-key', placeholder, count }],
      truncated: false,
    },
    connections,
    requests,
  };
}

/**
 * Writes the recording atomically, after a last scan of the whole text for the key in every
 * form the scrubber knows: found, nothing is written and the error names the place.
 */
export async function saveRecording(file: string, recording: Recording, secrets: readonly string[]): Promise<void> {
  const text = `${JSON.stringify(recording, null, 2)}\n`;
  const scrub = secretScrubber(secrets, '\u0000');
  const leaks = (value: string) => scrub(value) !== value;
  if (leaks(text)) {
    const place = placeOf(recording as unknown as Json, leaks) ?? 'the file as written';
    throw new SecretLeft(`a key would be written at ${place}; nothing was saved`);
  }
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, text, { mode: 0o600 });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
