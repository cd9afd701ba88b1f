import { createChalk } from './style.js';
import { safeLine } from './text.js';

/**
 * Connection state for a person, on stderr; stdout stays for data. Every text
 * may carry what a server sent (close reasons, error messages, stream ids), so
 * each goes through `safeLine` here, the one way to this stream.
 */
export interface StatusReporter {
  connecting(target: string): void;
  connected(text: string): void;
  reconnecting(delayMs: number, reason: string): void;
  /** Shown only with `verbose`. */
  info(text: string): void;
  /** Shown even with `quiet`. */
  warn(text: string): void;
  /** Clears a running spinner; call before the process ends. */
  stop(): void;
}

export interface StatusOptions {
  stream: NodeJS.WriteStream;
  /** A spinner instead of lines; the caller allows it only on a TTY with colour. */
  spinner: boolean;
  color: boolean;
  quiet: boolean;
  verbose: boolean;
}

function reconnectText(delayMs: number, reason: string): string {
  // No wait: the next of several addresses is tried at once.
  const wait = delayMs === 0 ? 'reconnecting now' : `reconnecting in ${(delayMs / 1000).toFixed(1)}s`;
  const why = safeLine(reason);
  return why === '' ? wait : `${wait} (${why})`;
}

export async function createStatusReporter(options: StatusOptions): Promise<StatusReporter> {
  return options.spinner && !options.quiet ? spinnerReporter(options) : lineReporter(options);
}

/** One prefixed line per event: readable in logs and when stderr is a file. */
function lineReporter({ stream, color, quiet, verbose }: StatusOptions): StatusReporter {
  const c = createChalk(color);
  const line = (text: string) => stream.write(`stream-posts: ${safeLine(text)}\n`);
  const say = quiet ? () => {} : line;
  return {
    connecting: (target) => say(`connecting to ${target}`),
    connected: (text) => say(text),
    reconnecting: (delayMs, reason) => say(reconnectText(delayMs, reason)),
    info: (text) => {
      if (verbose) say(text);
    },
    warn: (text) => stream.write(`stream-posts: ${c.yellow('warning:')} ${safeLine(text)}\n`),
    stop: () => {},
  };
}

/**
 * Spins only while not connected; once connected the spinner is replaced by a
 * persisted line and stopped, so posts on stdout never interleave with frames.
 */
async function spinnerReporter({ stream, color, verbose }: StatusOptions): Promise<StatusReporter> {
  const { default: ora } = await import('ora');
  const c = createChalk(color);
  // The CLI owns stdin and Ctrl-C; ora would otherwise put stdin in raw mode.
  const spinner = ora({ stream, discardStdin: false, color: color ? 'cyan' : false });
  // While the spinner runs, ora intercepts writes to the stream and redraws around them.
  const line = (text: string) => stream.write(`${text}\n`);
  return {
    connecting: (target) => spinner.start(`connecting to ${safeLine(target)}`),
    connected: (text) => spinner.stopAndPersist({ symbol: c.green('✔'), text: safeLine(text) }),
    reconnecting: (delayMs, reason) => spinner.start(reconnectText(delayMs, reason)),
    info: (text) => {
      if (verbose) line(c.dim(`ℹ ${safeLine(text)}`));
    },
    warn: (text) => line(c.yellow(`⚠ ${safeLine(text)}`)),
    stop: () => spinner.stop(),
  };
}
