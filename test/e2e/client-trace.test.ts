import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliFixture } from '../support/serve.js';
import { client, finish, runToEnd } from '../support/cli.js';
import { KEYS } from '../support/harness.js';
import { postWithCli, subscribed } from '../support/cli-output.js';

const fixture = cliFixture('trace');

/** A trace line: the time since the start, the direction, the frame or request. */
const TRACED = /^\+\d+\.\d{3}s [<>] /;

function traceLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => TRACED.test(line));
}

/**
 * Sends every open connection one frame, as a hostile or careless service might: this one
 * repeats the key, and carries a C1 control character (CSI, valid unescaped in JSON) that
 * would clear a terminal's screen.
 */
async function echoKeyToEveryConnection(key: string): Promise<void> {
  const frame = JSON.stringify({ event: 'notice', data: { message: `your key is ${key}` } }).replace(
    'your key',
    '\u009B2Jyour key',
  );
  const response = await fetch(`${fixture.serve.httpUrl}/_admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'send-frame', frame }),
  });
  expect(response.ok).toBe(true);
}

describe('--trace', () => {
  it('listen shows each frame on stderr (sub_ack included) and never the key, from a flag, the environment or a file; stdout is unchanged', async () => {
    const { url } = fixture.serve;
    const keyFile = join(fixture.tmp, 'alice.key');
    await writeFile(keyFile, `${KEYS.alice}\n`);
    const args = ['listen', '--url', url, '--json', '--last', '2', '--count', '1', '--streams', 'macro-wire'];
    const [plain, byFlag, byEnv, byFile] = await Promise.all([
      subscribed([...args, '--api-key', KEYS.alice]),
      subscribed([...args, '--trace', '--api-key', KEYS.alice]),
      subscribed([...args, '--trace'], { env: { STREAM_POSTS_API_KEY: KEYS.alice } }),
      subscribed([...args, '--trace', '--api-key-file', keyFile]),
    ]);
    await echoKeyToEveryConnection(KEYS.alice);
    // The echo reached each traced listener before the post that ends them.
    await Promise.all(
      [byFlag, byEnv, byFile].map((cli) => cli.waitFor((out) => /your key is/.test(out.stderr), 'the echo')),
    );
    await postWithCli(url, 'macro-wire', 'traced post');
    const results = await Promise.all([plain, byFlag, byEnv, byFile].map((cli) => finish(cli)));
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    const [untraced, ...traced] = results;
    expect(traceLines(untraced!.stderr)).toEqual([]);
    for (const result of traced) {
      // Data on stdout exactly as without the trace.
      expect(result.stdout).toBe(untraced!.stdout);
      const lines = traceLines(result.stderr);
      expect(lines.some((line) => / > \{"event":"on-stream-post"/.test(line))).toBe(true);
      expect(lines.some((line) => / < \{"event":"sub_ack"/.test(line))).toBe(true);
      expect(lines.some((line) => / < \{"event":"stream\.post\.created".*traced post/.test(line))).toBe(true);
      expect(lines.some((line) => line.includes('your key is [redacted]'))).toBe(true);
      expect(result.stderr).not.toContain(KEYS.alice);
      expect(result.stderr).not.toContain('\u009B');
    }
  });

  it('post --via rest shows the request and the reply, the key in neither', async () => {
    const desk = ['--url', fixture.serve.url, '--api-key', KEYS.macroWire];
    const result = await runToEnd(['post', ...desk, '-s', 'macro-wire', '--via', 'rest', '--trace', 'over REST']);
    expect(result.code, result.stderr).toBe(0);
    const lines = traceLines(result.stderr);
    expect(lines.some((line) => / > POST http:\/\/\S+\/v1\/streams\/macro-wire\/post \{.*"over REST"/.test(line))).toBe(
      true,
    );
    expect(lines.some((line) => / < 201 POST http:\/\/\S+\/v1\/streams\/macro-wire\/post \{"post":/.test(line))).toBe(
      true,
    );
    expect(result.stderr).not.toContain(KEYS.macroWire);
  });

  it('tree and history too: the tree subscription and its sub_ack, the REST reads and their replies', async () => {
    const reader = ['--url', fixture.serve.url, '--api-key', KEYS.alice, '--trace', '--json'];
    const [tree, history] = await Promise.all([
      runToEnd(['tree', ...reader, '--last', '1', '--idle-timeout', '300ms']),
      runToEnd(['history', ...reader, '--streams', 'macro-wire', '--limit', '1']),
    ]);
    expect([tree.code, history.code]).toEqual([0, 0]);
    expect(traceLines(tree.stderr)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/ > \{"event":"on-stream-post-tree"/),
        expect.stringMatching(/ < \{"event":"sub_ack","data":\{"command":"on-stream-post-tree"/),
      ]),
    );
    expect(traceLines(history.stderr)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/ > GET http:\/\/\S+\/v1\/streams\/macro-wire\/posts\?limit=1/),
        expect.stringMatching(/ < 200 GET http:\/\/\S+\/v1\/streams\/macro-wire\/posts\?limit=1 \{"posts":\[/),
      ]),
    );
    for (const result of [tree, history]) expect(result.stderr).not.toContain(KEYS.alice);
  });

  it('faults shows the admin request and its reply', async () => {
    const result = await runToEnd(['faults', 'list', '--url', fixture.serve.url, '--trace']);
    expect(result.code, result.stderr).toBe(0);
    expect(traceLines(result.stderr)).toEqual([
      expect.stringMatching(/ > GET http:\/\/\S+\/_admin\/faults$/),
      expect.stringMatching(/ < 200 GET http:\/\/\S+\/_admin\/faults \{"faults":\[/),
    ]);
  });

  it('is off by default: -v adds status lines, never frames', async () => {
    const cli = client(['streams', '--url', fixture.serve.url, '--api-key', KEYS.alice, '-v', '--ids']);
    const result = await finish(cli);
    expect(result.code, result.stderr).toBe(0);
    expect(traceLines(result.stderr)).toEqual([]);
  });
});
