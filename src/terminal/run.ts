// The terminal from start to end: the model, the connection, the screen and the effects put
// together, until `q`, Ctrl-C, a signal or a lost connection. The command (cli/commands/
// terminal.ts) gives it the streams, the environment and the settings.
import type { MarkdownRenderer } from '../render/markdown.js';
import type { AlertRule } from './alerts.js';
import type { AlertCommand } from './effects.js';
import type { Remembering } from './remembering.js';
import type { SessionOptions } from './session.js';
import type { ThemeName } from './theme.js';
import type { Ui } from './ui.js';
import { jobControl } from './job-control.js';
import { update, type TerminalEvent } from './update.js';

/**
 * The markdown renderer (the biggest load left, for the detail pane) loads at least this long
 * after the first subscription, once the feed has been quiet for MARKDOWN_QUIET_MS: a burst of
 * news at the start is drawn first. It loads anyway MARKDOWN_LATEST_MS after the
 * subscription, and at once when a detail pane wants it.
 */
const MARKDOWN_AFTER_MS = 1000;
const MARKDOWN_QUIET_MS = 250;
const MARKDOWN_LATEST_MS = 10_000;

const WARM_UP =
  '**a** _b_ `c`\n\n- one\n- two\n\n1. x\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n\n[l](https://a.example) https://b.example\n';

/** The connection's options are the session's. */
export interface TerminalRunOptions extends Pick<
  SessionOptions,
  'endpoints' | 'apiKey' | 'authQuery' | 'reconnect' | 'timeoutMs' | 'streams' | 'last'
> {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
  match: RegExp | undefined;
  color: boolean;
  utc: boolean;
  buffer: number;
  maxPins?: number | undefined;
  /** The alert rules, in the order they are tried. */
  rules: AlertRule[];
  /** What the last session left, and where this one is kept. */
  kept: Remembering;
  theme?: ThemeName | undefined;
  /** What the header names as the service. */
  service: string;
  /** Starts an alert rule's command. */
  command: (command: string, report: (text: string) => void) => AlertCommand;
  /** Each ends the view as `q` does: the command's stop signal (Ctrl-C, SIGTERM), the demo's. */
  signals?: readonly (AbortSignal | undefined)[] | undefined;
  onSubscribed?: (() => void) | undefined;
}

/** Runs the terminal; resolves with what ended it when that was a failure (the screen given back first). */
export async function runTerminal(options: TerminalRunOptions): Promise<unknown> {
  const { stdin, stdout, env, kept } = options;
  const [{ TerminalModel }, { FrameStore }, { Session }, { enterScreen }, { Effects }, { mountUi }, themes] =
    await Promise.all([
      import('./model.js'),
      import('./store.js'),
      import('./session.js'),
      import('./screen.js'),
      import('./effects.js'),
      import('./ui.js'),
      import('./theme.js'),
    ]);
  const { supportsHyperlinks } = await import('../render/hyperlinks.js');
  const hyperlinks = options.color && supportsHyperlinks(stdout, env);
  const model = new TerminalModel({
    capacity: options.buffer,
    ...(options.maxPins === undefined ? {} : { maxPins: options.maxPins }),
    rules: options.rules,
    match: options.match,
    ...kept.model,
  });
  const store = new FrameStore();
  /** Until the terminal has said its background (before the first frame). */
  let theme = themes.THEMES.dark;
  let markdown: MarkdownRenderer | undefined;
  let loadingMarkdown: Promise<void> | undefined;
  /** Loads `tree`'s markdown renderer once: soon after the start, or when a detail pane needs it first. */
  const loadMarkdown = () =>
    (loadingMarkdown ??= import('../render/markdown.js').then(async ({ loadMarkdownRenderer }) => {
      const width = Math.max(20, (stdout.columns || 80) - 2);
      const render = await loadMarkdownRenderer({ color: options.color, width, hyperlinks, linkColour: theme.link });
      // The first renders of a table or a list pay for code paths not yet compiled, which can
      // push a post past the render budget into plain text: paid here, before any post's.
      for (let round = 0; round < 3; round++) render(WARM_UP);
      markdown = render;
      store.soon();
    }));
  /** When the feed or the view last changed (performance.now()). */
  let lastChanged = 0;
  const loadMarkdownWhenQuiet = (subscribedAt: number, delay: number) => {
    setTimeout(() => {
      if (loadingMarkdown !== undefined) return;
      const now = performance.now();
      const quietFor = now - lastChanged;
      if (quietFor >= MARKDOWN_QUIET_MS || now - subscribedAt >= MARKDOWN_LATEST_MS) void loadMarkdown();
      else loadMarkdownWhenQuiet(subscribedAt, MARKDOWN_QUIET_MS - quietFor);
    }, delay).unref();
  };
  let quit!: () => void;
  const quitting = new Promise<void>((resolve) => {
    quit = resolve;
  });
  /** A message in the footer, through `update` like any other event. */
  const say = (text: string) => {
    step({ kind: 'say', text });
    store.soon();
  };
  const effects = new Effects({
    selected: () => model.selected(),
    say,
    write: (data) => stdout.write(data),
    env,
    quit: () => quit(),
    reconnect: () => session.reconnectNow(),
    suspend: () => job.suspend(),
    save: (remembered) => kept.save(remembered),
    command: options.command,
  });
  /** One event through `update`, its effects carried out. */
  const step = (event: TerminalEvent) => {
    for (const effect of update(model, event).effects) effects.carry(effect);
  };
  kept.start(say);
  const session = new Session({
    endpoints: options.endpoints,
    apiKey: options.apiKey,
    authQuery: options.authQuery,
    reconnect: options.reconnect,
    timeoutMs: options.timeoutMs,
    streams: options.streams,
    last: options.last,
    model,
    changed: () => {
      lastChanged = performance.now();
      store.soon();
    },
    step,
    onSubscribed: () => {
      loadMarkdownWhenQuiet(performance.now(), MARKDOWN_AFTER_MS);
      options.onSubscribed?.();
    },
  });

  const screen = enterScreen(stdout, stdin);
  const onSignal = () => quit();
  // Ctrl-C and SIGTERM come as the command's stop signal; a hang-up and Ctrl-Z through job control.
  const job = jobControl({
    stopping: () => screen.suspend(),
    resumed: () => {
      screen.resume();
      mounted?.redraw();
    },
    notStopped: () => effects.say('Ctrl-Z: no shell with job control started this, so it cannot be suspended'),
    hangUp: onSignal,
  });
  const signals = (options.signals ?? []).filter((signal) => signal !== undefined);
  for (const signal of signals) signal.addEventListener('abort', onSignal);
  const ticker = setInterval(() => {
    step({ kind: 'tick' });
    store.soon();
  }, 1000);
  let mounted: Ui | undefined;
  let failure: unknown;
  try {
    // The connection opens while the terminal says its background colour.
    const running = session.run();
    running.catch(() => undefined);
    const noAnswer = () => Promise.resolve(undefined);
    theme = await themes.chooseTheme(
      options.theme,
      options.color ? () => themes.askBackground(stdin, stdout) : noAnswer,
      env,
    );
    mounted = mountUi(
      {
        model,
        store,
        service: options.service,
        dialect: () => session.dialect,
        latency: () => session.medianLatency(),
        color: options.color,
        hyperlinks,
        utc: options.utc,
        theme,
        markdown: () => {
          void loadMarkdown();
          return markdown;
        },
        onEffect: (effect) => effects.carry(effect),
      },
      stdout,
      stdin,
    );
    // A frame or a key that throws ends the command, the terminal given back.
    await Promise.race([running, quitting, mounted.failed]);
  } catch (error) {
    failure = error;
  } finally {
    clearInterval(ticker);
    effects.silence();
    store.stop();
    job.close();
    for (const signal of signals) signal.removeEventListener('abort', onSignal);
    mounted?.unmount();
    screen.restore();
    await session.stop();
    await kept.close();
    await effects.close();
  }
  return failure;
}
