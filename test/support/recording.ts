import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Recording } from '../../src/protocol/recording.js';
import { client, type CliProcess, type Exit } from './cli.js';
import { startServe, type Serve } from './serve.js';

/** Keys of a seed made for one test: UUIDs, as the hosted service issues them. */
export interface SeedKeys {
  alice: string;
  bob: string;
  macro: string;
}

/**
 * A seed with fresh keys: alice and bob follow `macro` (alice owns it). `plant` adds a stream
 * whose name is bob's key, which alice follows: a secret where no redaction looks for one.
 */
export function recordingSeed(plant = false): { seed: object; keys: SeedKeys } {
  const keys = { alice: randomUUID(), bob: randomUUID(), macro: randomUUID() };
  const seed = {
    users: [
      { id: 'alice', name: 'Alice', readerKey: keys.alice, follows: plant ? ['macro', 'planted'] : ['macro'] },
      { id: 'bob', name: 'Bob', readerKey: keys.bob, follows: ['macro'] },
    ],
    streams: [
      { id: 'macro', name: 'Macro Wire', owner: 'alice', key: keys.macro },
      { id: 'desk', name: 'Desk Notes', owner: 'bob', key: randomUUID() },
      ...(plant ? [{ id: 'planted', name: keys.bob, owner: 'alice', key: randomUUID() }] : []),
    ],
    posts: [{ streamId: 'macro', content: 'seeded post', contentType: 'rawtext' }],
  };
  return { seed, keys };
}

/** A `serve` in the hosted dialect (no `hello=1` from the clients) on that seed: the upstream. */
export async function startUpstream(tmp: string, seed: object, args: string[] = []): Promise<Serve> {
  const file = join(tmp, `seed-${randomUUID()}.json`);
  await writeFile(file, JSON.stringify(seed));
  return startServe(['--seed', file, ...args]);
}

export interface Recorder {
  cli: CliProcess;
  url: string;
  httpUrl: string;
  file: string;
}

/** `serve --record FILE --upstream URL` on a free port. */
export async function startRecorder(tmp: string, upstream: string, args: string[] = []): Promise<Recorder> {
  const file = join(tmp, `recording-${randomUUID()}.json`);
  const cli = client(['serve', '--port', '0', '--record', file, '--upstream', upstream, ...args]);
  const url = await cli.url();
  return { cli, url, httpUrl: url.replace(/^ws/, 'http'), file };
}

/** Stops the recorder as Ctrl-C does; resolves with its exit and the file it saved (as text), if any. */
export async function stopRecorder(recorder: Recorder): Promise<{ exit: Exit; text: string | undefined }> {
  recorder.cli.child.kill('SIGINT');
  const exit = await recorder.cli.exit();
  const text = await readFile(recorder.file, 'utf8').catch(() => undefined);
  return { exit, text };
}

/** Stops the recorder and parses what it saved. */
export async function savedRecording(recorder: Recorder): Promise<{ recording: Recording; text: string }> {
  const { exit, text } = await stopRecorder(recorder);
  if (exit.code !== 0 || text === undefined)
    throw new Error(`the recorder ended with ${exit.code} and no file\n${recorder.cli.stderr}`);
  return { recording: JSON.parse(text) as Recording, text };
}

/** Every form a key may be written in that a reader of a file would still recognise. */
export function keyForms(key: string): string[] {
  const hex = [...Buffer.from(key, 'utf8')].map((byte) => byte.toString(16).padStart(2, '0'));
  return [
    key,
    encodeURIComponent(key),
    hex.map((byte) => `%${byte}`).join(''),
    hex.map((byte) => `%${byte.toUpperCase()}`).join(''),
    hex.map((byte) => `\\u00${byte}`).join(''),
    hex.map((byte) => `\\\\u00${byte}`).join(''),
  ];
}
