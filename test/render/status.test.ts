import { PassThrough } from 'node:stream';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { createStatusReporter, type StatusOptions } from '../../src/render/status.js';

function capture(): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = new PassThrough();
  let written = '';
  stream.on('data', (chunk: Buffer) => (written += chunk.toString()));
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => written };
}

async function run(options: Omit<StatusOptions, 'stream'>): Promise<string> {
  const { stream, text } = capture();
  const status = await createStatusReporter({ ...options, stream });
  status.connecting('ws://127.0.0.1:8080/v1/ws');
  status.connected('connected as alice (streams: a, b)');
  status.reconnecting(2000, 'connection closed: 1006');
  status.info('attempt 2');
  status.warn('duplicate post');
  status.stop();
  await new Promise((resolve) => setImmediate(resolve));
  return text();
}

describe('createStatusReporter without a spinner', () => {
  it('prints one prefixed line per event', async () => {
    expect(await run({ spinner: false, color: false, quiet: false, verbose: false })).toBe(
      [
        'stream-posts: connecting to ws://127.0.0.1:8080/v1/ws',
        'stream-posts: connected as alice (streams: a, b)',
        'stream-posts: reconnecting in 2.0s (connection closed: 1006)',
        'stream-posts: warning: duplicate post',
        '',
      ].join('\n'),
    );
  });

  it('says "now" for a reconnect without a wait (the next of several addresses)', async () => {
    const { stream, text } = capture();
    const status = await createStatusReporter({ stream, spinner: false, color: false, quiet: false, verbose: false });
    status.reconnecting(0, 'close 1006');
    expect(text()).toBe('stream-posts: reconnecting now (close 1006)\n');
  });

  it('prints info lines only when verbose', async () => {
    expect(await run({ spinner: false, color: false, quiet: false, verbose: true })).toContain(
      'stream-posts: attempt 2\n',
    );
  });

  it('prints only warnings when quiet, even with a spinner asked for', async () => {
    expect(await run({ spinner: true, color: false, quiet: true, verbose: true })).toBe(
      'stream-posts: warning: duplicate post\n',
    );
  });

  it('colours the warning only with colour', async () => {
    expect(await run({ spinner: false, color: true, quiet: false, verbose: false })).toContain(
      'stream-posts: \u001B[33mwarning:\u001B[39m duplicate post',
    );
  });
});

describe('createStatusReporter with a spinner', () => {
  it('persists the connected line and writes warnings and verbose info', async () => {
    const text = await run({ spinner: true, color: true, quiet: false, verbose: true });
    expect(text).toContain('\u001B[32m✔\u001B[39m connected as alice (streams: a, b)\n');
    expect(text).toContain('reconnecting in 2.0s (connection closed: 1006)');
    expect(text).toContain('\u001B[2mℹ attempt 2\u001B[22m\n');
    expect(text).toContain('\u001B[33m⚠ duplicate post\u001B[39m\n');
  });
});

describe('text a server sent, in any status line', () => {
  it('is shown without control, bidi or zero-width characters, on one line', async () => {
    const hostile = 'x\u001B]0;PWNED\u0007\u009B2J\u202Eevil\u200B\ny';
    for (const spinner of [false, true]) {
      const { stream, text } = capture();
      const status = await createStatusReporter({ stream, spinner, color: true, quiet: false, verbose: true });
      status.connected(hostile);
      status.reconnecting(1000, hostile);
      status.info(hostile);
      status.warn(hostile);
      status.stop();
      await new Promise((resolve) => setImmediate(resolve));
      const written = text().replace(/\u001B\[[0-9;]*m/g, '');
      expect(written).not.toMatch(/[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u202E\u200B]/);
      expect(written.match(/x \]0;PWNED 2J evil y/g)?.length, written).toBeGreaterThanOrEqual(spinner ? 3 : 4);
    }
  });
});

describe('createStatusReporter with a spinner on a terminal', () => {
  // ora draws frames only where it sees an interactive terminal: not where CI is set or TERM
  // is dumb, so this test gives ora a user's terminal environment, and its timers run on a fake clock.
  it('spins while connecting and stops spinning once connected', async () => {
    const saved = { CI: process.env['CI'], TERM: process.env['TERM'] };
    delete process.env['CI'];
    process.env['TERM'] = 'xterm-256color';
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'] });
    onTestFinished(() => {
      vi.useRealTimers();
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    const terminal = Object.assign(new PassThrough(), {
      isTTY: true,
      columns: 80,
      cursorTo: () => true,
      clearLine: () => true,
      moveCursor: () => true,
    });
    let written = '';
    terminal.on('data', (chunk: Buffer) => (written += chunk.toString()));
    const status = await createStatusReporter({
      stream: terminal as unknown as NodeJS.WriteStream,
      spinner: true,
      color: true,
      quiet: false,
      verbose: false,
    });
    status.connecting('ws://127.0.0.1:8080/v1/ws');
    await vi.advanceTimersByTimeAsync(200);
    status.connected('connected as alice');
    await vi.advanceTimersByTimeAsync(0);
    const afterConnected = written.length;
    await vi.advanceTimersByTimeAsync(200);
    expect(written.length).toBe(afterConnected);
    status.stop();
    expect(written).toMatch(/[⠋⠙⠹⠸](?:\u001B\[39m)? connecting to ws:\/\/127\.0\.0\.1:8080\/v1\/ws/);
    expect(written).toContain('\u001B[32m✔\u001B[39m connected as alice\n');
  });
});
