#!/usr/bin/env node
/**
 * Sums the self time of a V8 .cpuprofile by function (and by file), to see
 * what a server spends its time on: `node bench/profile-summary.mjs FILE [TOP]`.
 * Profiles come from `node bench/run.mjs fanout --profile=DIR`.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const [file, topArg = '30'] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs FILE.cpuprofile [TOP]\n');
  process.exit(2);
}
const top = Number(topArg);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map();
// timeDeltas[i] is the time before samples[i]; it is charged to that sample's node.
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

function where(frame) {
  const file = frame.url ? basename(frame.url.replace(/^file:\/\//, '')) : '';
  return file ? `${file}:${frame.lineNumber + 1}` : '';
}

const byFunction = new Map();
const byFile = new Map();
for (const [id, us] of selfUs) {
  const { callFrame } = byId.get(id);
  const name = `${callFrame.functionName || '(anonymous)'} ${where(callFrame)}`.trim();
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  const file = callFrame.url ? basename(callFrame.url) : callFrame.functionName || '(native)';
  byFile.set(file, (byFile.get(file) ?? 0) + us);
}

const print = (title, map) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(
      `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}\n`,
    );
  }
};
process.stdout.write(`${file}: ${(total / 1000).toFixed(0)} ms sampled\n`);
print('self time by function', byFunction);
print('self time by file', byFile);
