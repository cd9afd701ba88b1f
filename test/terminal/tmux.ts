import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach } from 'vitest';
import { BIN } from '../support/cli.js';
import { publishToStream } from '../support/harness.js';

const run = promisify(execFile);

/** The longest a screen may take to show what a test waits for before the test fails. */
const SCREEN_WAIT_MS = 15_000;
// How often the screen is read while waiting: capture-pane is the only way to see it.
const POLL_MS = 40;

const open = new Set<Tmux>();
afterEach(async () => {
  await Promise.all([...open].map((tmux) => tmux.kill()));
});

/** One tmux server of the test's own (its own socket), one session, one pane running a command. */
export class Tmux {
  readonly socket = `terminal-test-${randomBytes(6).toString('hex')}`;

  private constructor() {}

  /**
   * Starts `stream-posts ARGS` in a 120×40 pane, after a line on the primary screen, and
   * keeps the pane after it ends with its exit status printed, so a test reads both.
   */
  static async start(args: string[], env: Record<string, string> = {}, size = { x: 120, y: 40 }): Promise<Tmux> {
    const tmux = new Tmux();
    open.add(tmux);
    // The variables go on the command line: the pane's shell may be a login shell that sets PATH again.
    const variables = Object.entries({
      TERM: 'xterm-256color',
      XDG_CONFIG_HOME: '/nonexistent-stream-posts-config',
      ...env,
    }).map(([name, value]) => `${name}=${value}`);
    const quoted = ['env', ...variables, process.execPath, BIN, ...args].map(shellWord).join(' ');
    const command = `printf 'primary screen\\n'; ${quoted}; echo "[exit $?]"; exec cat`;
    await tmux.tmux('-f', '/dev/null', 'new-session', '-d', '-x', String(size.x), '-y', String(size.y), command);
    return tmux;
  }

  async tmux(...args: string[]): Promise<string> {
    const { stdout } = await run('tmux', ['-L', this.socket, ...args]);
    return stdout;
  }

  /** The screen as text (`colors`: with its SGR sequences). */
  async screen(colors = false): Promise<string> {
    return this.tmux('capture-pane', '-p', ...(colors ? ['-e'] : []));
  }

  /** A tmux format about the pane, such as `#{alternate_on}` or `#{window_bell_flag}`. */
  async format(format: string): Promise<string> {
    return (await this.tmux('display-message', '-p', format)).trim();
  }

  /** Waits until the screen shows what `check` wants; the screen at that moment is returned. */
  async waitFor(check: RegExp | ((screen: string) => boolean), what = String(check), colors = false): Promise<string> {
    const test = typeof check === 'function' ? check : (screen: string) => check.test(screen);
    const deadline = Date.now() + SCREEN_WAIT_MS;
    let screen = '';
    for (;;) {
      screen = await this.screen(colors);
      if (test(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`the screen never showed ${what}; it shows:\n${screen}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Waits until a tmux format has the value. */
  async waitForFormat(format: string, value: string): Promise<void> {
    const deadline = Date.now() + SCREEN_WAIT_MS;
    while ((await this.format(format)) !== value) {
      if (Date.now() > deadline) throw new Error(`${format} never became ${value}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Keys as tmux names them (`j`, `Enter`, `Escape`, `C-c`, `Space`); `literal` sends text as typed. */
  async keys(...keys: string[]): Promise<void> {
    await this.tmux('send-keys', ...keys);
  }

  async type(text: string): Promise<void> {
    await this.tmux('send-keys', '-l', text);
  }

  async resize(x: number, y: number): Promise<void> {
    await this.tmux('resize-window', '-x', String(x), '-y', String(y));
  }

  async kill(): Promise<void> {
    open.delete(this);
    await this.tmux('kill-server').catch(() => undefined);
    // tmux 3.3 leaves the socket file of a server it was told to kill.
    await rm(join(process.env['TMUX_TMPDIR'] ?? tmpdir(), `tmux-${process.getuid?.() ?? 0}`, this.socket), {
      force: true,
    });
  }
}

const shellWord = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** The rows of the feed that show `text`. */
export function rowsWith(screen: string, text: string): string[] {
  return screen.split('\n').filter((line) => line.includes(text));
}

/** The line index of the first row showing `text` (-1 when none). */
export const lineOf = (screen: string, text: string): number =>
  screen.split('\n').findIndex((line) => line.includes(text));

/** Publishes as the stream's owner; whale-alerts is a custom stream, and alice follows its BTC posts. */
export function publishAsOwner(url: string, stream: string, text: string, extra: Record<string, unknown> = {}) {
  return publishToStream(url, stream, text, stream === 'whale-alerts' ? { customTarget: 'BTC', ...extra } : extra);
}

/** A config directory (for XDG_CONFIG_HOME) whose default profile has these alert rules. */
export async function alertsConfig(directory: string, alerts: Record<string, unknown>[]): Promise<string> {
  await mkdir(join(directory, 'stream-posts'), { recursive: true });
  await writeFile(
    join(directory, 'stream-posts', 'config.json'),
    JSON.stringify({ profiles: { default: { alerts } } }),
  );
  return directory;
}
