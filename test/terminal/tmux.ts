import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN } from '../support/cli.js';
import { forEachFile } from '../support/file-hooks.js';
import { publishToStream } from '../support/harness.js';

const run = promisify(execFile);

/** The longest a screen may take to show what a test waits for before the test fails. */
const SCREEN_WAIT_MS = 15_000;
// How often the screen is read while waiting: capture-pane is the only way to see it.
const POLL_MS = 40;

const open = new Set<Tmux>();
forEachFile({
  async afterEach() {
    await Promise.all([...open].map((tmux) => tmux.kill()));
  },
});

/** One tmux server of the test's own (its own socket), one session, one pane running a command. */
export class Tmux {
  readonly socket = `terminal-test-${randomBytes(6).toString('hex')}`;
  /** A config directory of the pane's own when the test gives none: a session kept there reaches no other test. */
  #config: string | undefined;

  private constructor() {}

  /** `env` with XDG_CONFIG_HOME: the test's, or an empty folder of this pane's own. */
  async #withConfig(env: Record<string, string>): Promise<Record<string, string>> {
    if (env['XDG_CONFIG_HOME'] !== undefined) return env;
    this.#config = await mkdtemp(join(tmpdir(), 'stream-posts-tmux-config-'));
    return { ...env, XDG_CONFIG_HOME: this.#config };
  }

  /**
   * Starts `stream-posts ARGS` in a 120×40 pane, after a line on the primary screen, and
   * keeps the pane after it ends with its exit status printed, so a test reads both.
   */
  static async start(
    args: string[],
    env: Record<string, string> = {},
    size = { x: 120, y: 40 },
    /** tmux's global options, set before the pane starts (`window-style`). */
    options: Record<string, string> = {},
  ): Promise<Tmux> {
    const tmux = new Tmux();
    open.add(tmux);
    const command = `printf 'primary screen\\n'; ${commandLine(args, await tmux.#withConfig(env))}; echo "[exit $?]"; exec cat`;
    const setting = Object.entries(options).flatMap(([name, value]) => ['set-option', '-g', name, value, ';']);
    await tmux.tmux(
      '-f',
      '/dev/null',
      'start-server',
      ';',
      ...setting,
      'new-session',
      '-d',
      '-x',
      String(size.x),
      '-y',
      String(size.y),
      command,
    );
    return tmux;
  }

  /**
   * Types `stream-posts ARGS` into an interactive shell with job control (prompt `$ `), as
   * a user would: Ctrl-Z stops the job and the shell's `fg` brings it back.
   */
  static async startInShell(args: string[], env: Record<string, string> = {}): Promise<Tmux> {
    const tmux = new Tmux();
    open.add(tmux);
    const shell = ['env', 'PS1=$ ', 'bash', '--norc', '--noprofile', '-i'].map(shellWord).join(' ');
    await tmux.tmux('-f', '/dev/null', 'new-session', '-d', '-x', '120', '-y', '40', shell);
    await tmux.waitFor(/^\$/m, 'the prompt');
    // Alone on its line: after a stopped command, bash would run the rest of a list at once.
    await tmux.type(commandLine(args, await tmux.#withConfig(env)));
    await tmux.keys('Enter');
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
    if (this.#config !== undefined) await rm(this.#config, { recursive: true, force: true });
    // tmux 3.3 leaves the socket file of a server it was told to kill.
    await rm(join(process.env['TMUX_TMPDIR'] ?? tmpdir(), `tmux-${process.getuid?.() ?? 0}`, this.socket), {
      force: true,
    });
  }
}

const shellWord = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** `stream-posts ARGS` as a shell command line, with the variables on it. */
function commandLine(args: string[], env: Record<string, string>): string {
  // The variables go on the command line: the pane's shell may be a login shell that sets PATH again.
  const variables = Object.entries({
    TERM: 'xterm-256color',
    ...env,
  }).map(([name, value]) => `${name}=${value}`);
  return ['env', ...variables, process.execPath, BIN, ...args].map(shellWord).join(' ');
}

/** The rows of the feed that show `text`. */
export function rowsWith(screen: string, text: string): string[] {
  return screen.split('\n').filter((line) => line.includes(text));
}

/** A cell's look as a screen captured with its colours (`screen(true)`) draws it. */
export interface CellStyle {
  /** SGR colour codes: `33`, `93`, `38;5;208`, `38;2;0;0;255`; undefined: the default. */
  fg: string | undefined;
  bg: string | undefined;
  bold: boolean;
  dim: boolean;
  underline: boolean;
  inverse: boolean;
}

const PLAIN: CellStyle = { fg: undefined, bg: undefined, bold: false, dim: false, underline: false, inverse: false };

/** The style after one SGR sequence's parameters. */
function applySgr(style: CellStyle, parameters: string): CellStyle {
  const codes = parameters === '' ? [0] : parameters.split(';').map(Number);
  let next = { ...style };
  for (let at = 0; at < codes.length; at++) {
    const code = codes[at]!;
    const extended = () => {
      const kind = codes[at + 1];
      const length = kind === 5 ? 2 : kind === 2 ? 4 : 1;
      const value = codes.slice(at, at + 1 + length).join(';');
      at += length;
      return value;
    };
    if (code === 0) next = { ...PLAIN };
    else if (code === 1) next.bold = true;
    else if (code === 2) next.dim = true;
    else if (code === 4) next.underline = true;
    else if (code === 7) next.inverse = true;
    else if (code === 22) next = { ...next, bold: false, dim: false };
    else if (code === 24) next.underline = false;
    else if (code === 27) next.inverse = false;
    else if (code === 38) next.fg = extended();
    else if (code === 48) next.bg = extended();
    else if (code === 39) next.fg = undefined;
    else if (code === 49) next.bg = undefined;
    else if ((code >= 30 && code <= 37) || (code >= 90 && code <= 97)) next.fg = String(code);
    else if ((code >= 40 && code <= 47) || (code >= 100 && code <= 107)) next.bg = String(code);
  }
  return next;
}

/**
 * The style of the first cell of `text` on the first line that shows it (`last`: the last
 * line), in a screen captured with `capture-pane -e`; undefined when no line shows it.
 */
export function styleOf(colored: string, text: string, which: 'first' | 'last' = 'first'): CellStyle | undefined {
  const lines = colored.split('\n');
  for (const line of which === 'first' ? lines : lines.reverse()) {
    let style = PLAIN;
    let plain = '';
    const styles: CellStyle[] = [];
    for (let at = 0; at < line.length;) {
      const sgr = /^\u001B\[([0-9;]*)m/.exec(line.slice(at, at + 40));
      if (sgr !== null) {
        style = applySgr(style, sgr[1]!);
        at += sgr[0].length;
        continue;
      }
      const point = String.fromCodePoint(line.codePointAt(at)!);
      plain += point;
      for (let unit = 0; unit < point.length; unit++) styles.push(style);
      at += point.length;
    }
    const found = plain.indexOf(text);
    if (found !== -1) return styles[found];
  }
  return undefined;
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
