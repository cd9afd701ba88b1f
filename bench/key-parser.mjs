/**
 * bench/key-parser — the terminal's key parser (src/terminal/key-parser.ts) against Node's
 * `readline.emitKeypressEvents`, on the same input: typed keys, arrows and pasted text, as
 * one read each. Reports microseconds per read and per key for both (median of ROUNDS).
 *
 *   node bench/key-parser.mjs
 *
 * The parser is bundled from the source with esbuild first (no build of the package needed).
 */
import { PassThrough } from 'node:stream';
import { emitKeypressEvents } from 'node:readline';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROUNDS = 7;
const READS = 20_000;

const dir = mkdtempSync(join(tmpdir(), 'key-parser-'));
const out = join(dir, 'key-parser.mjs');
await build({
  entryPoints: ['src/terminal/key-parser.ts'],
  bundle: true,
  format: 'esm',
  platform: 'node',
  outfile: out,
  logLevel: 'warning',
});
const { parseKeys } = await import(pathToFileURL(out).href);
rmSync(dir, { recursive: true, force: true });

/** What one read brings: a key, an arrow, a burst typed by a script, a paste. */
const READS_OF = ['j', '\u001B[B', 'jjjk\r', '\u001B[1;5A\u001B[6~g', '/bitcoin etf approval\r', 'x'.repeat(64)];
const keysIn = READS_OF.map((data) => parseKeys(data).length);

const median = (values) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)];

function timeOurs() {
  let keys = 0;
  const began = performance.now();
  for (let at = 0; at < READS; at++) keys += parseKeys(READS_OF[at % READS_OF.length]).length;
  return { ms: performance.now() - began, keys };
}

function timeReadline() {
  const input = new PassThrough();
  input.setEncoding('utf8');
  emitKeypressEvents(input);
  let keys = 0;
  input.on('keypress', () => keys++);
  // readline's parser runs in the stream's 'data' listener, synchronously on each write's emit.
  const began = performance.now();
  for (let at = 0; at < READS; at++) input.emit('data', READS_OF[at % READS_OF.length]);
  return { ms: performance.now() - began, keys };
}

for (const run of [timeOurs, timeReadline]) run(); // warm up
const results = {};
for (const [name, run] of [
  ['ours', timeOurs],
  ['readline.emitKeypressEvents', timeReadline],
]) {
  const rounds = Array.from({ length: ROUNDS }, run);
  const ms = median(rounds.map((round) => round.ms));
  results[name] = {
    usPerRead: round3((ms * 1000) / READS),
    usPerKey: round3((ms * 1000) / rounds[0].keys),
    keys: rounds[0].keys,
  };
}
function round3(value) {
  return Math.round(value * 1000) / 1000;
}
console.log(JSON.stringify({ reads: READS, keysPerReadCycle: keysIn, ...results }, null, 2));
console.log(`readline / ours: ${round3(results['readline.emitKeypressEvents'].usPerRead / results.ours.usPerRead)}×`);
