import type { AlertEffect } from '../../terminal/model.js';
import type { AlertRule, AlertRuleInput } from '../../terminal/alerts.js';
import type { KeyEffect } from '../../terminal/bindings.js';
import type * as UiModule from '../../terminal/ui.js';
import type { MarkdownRenderer } from '../../render/markdown.js';
import type { ThemeName } from '../../terminal/theme.js';
import { commandFailure } from '../../api/cli-words.js';
import { requireKey, type CommonOptions } from '../common.js';
import { wsWhere } from '../describe.js';
import { EXIT, ExitError } from '../exit.js';
import { writeConfig, type ConfigFile } from '../settings.js';

export interface TerminalOptions extends CommonOptions {
  streams: string[] | undefined;
  last: number;
  match: RegExp | undefined;
  utc: boolean;
  buffer: number;
  /** Pinned posts held apart from the buffer (the model's default when not given). */
  maxPins?: number | undefined;
  reconnect: boolean;
  /** `--alert REGEX`, in order; they act before the profile's rules. */
  alerts: string[];
  /** The profile's `alerts` (see settings.ts). */
  profileAlerts?: AlertRuleInput[] | undefined;
  /** Where the session is kept and what the last one left: the profile's `terminal` section (none: nothing is kept). */
  memory?: { path: string; profile: string; section: unknown } | undefined;
  /** `--theme`: the colours for this background, instead of asking the terminal. */
  theme?: ThemeName | undefined;
  /** Ends the view as `q` does (the demo stops it this way). */
  signal?: AbortSignal;
  /** Called once the subscription is first acknowledged (the demo starts publishing then). */
  onSubscribed?: () => void;
}

/** How long after the first subscription the markdown renderer loads, unless a detail pane wants it sooner. */
const MARKDOWN_AFTER_MS = 1000;

const WARM_UP =
  '**a** _b_ `c`\n\n- one\n- two\n\n1. x\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n\n[l](https://a.example) https://b.example\n';

export const NOT_A_TERMINAL = 'terminal needs an interactive terminal; use tree or listen';
export const NO_CURSOR_ADDRESSING = 'terminal needs a terminal with cursor addressing; use tree or listen';

/**
 * Whether the terminal named by TERM can place the cursor: `dumb` (an editor's shell, a CI
 * log) and `unknown` cannot, and an unset TERM names no terminal at all. Windows sets none.
 */
export function cursorAddressing(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): boolean {
  if (platform === 'win32') return true;
  const term = env['TERM'] ?? '';
  return term !== '' && term !== 'dumb' && !term.startsWith('dumb-') && term !== 'unknown';
}

/** The rules in the order they are tried: `--alert` first (each rings the bell), then the profile's. */
export async function alertRules(
  options: Pick<TerminalOptions, 'alerts' | 'profileAlerts'>,
  saved: readonly AlertRule[] = [],
): Promise<AlertRule[]> {
  const { compileRules, AlertRuleError } = await import('../../terminal/alerts.js');
  try {
    return compileRules([
      ...options.alerts.map((match, index) => ({
        name: `--alert ${index + 1}`,
        rule: { match, action: 'bell' as const },
      })),
      ...(options.profileAlerts ?? []).map((rule, index) => ({ name: `profile rule ${index + 1}`, rule })),
    ]).concat(saved);
  } catch (error) {
    if (error instanceof AlertRuleError) throw new ExitError(EXIT.usage, error.message);
    throw error;
  }
}

/** `terminal`: the full-screen news terminal, until `q`, Ctrl-C, a signal or a lost connection. */
export async function terminal(options: TerminalOptions): Promise<number> {
  const stdin = process.stdin;
  const stdout = process.stdout;
  if (stdin.isTTY !== true || stdout.isTTY !== true) throw new ExitError(EXIT.usage, NOT_A_TERMINAL);
  if (!cursorAddressing(process.env)) throw new ExitError(EXIT.usage, NO_CURSOR_ADDRESSING);
  const apiKey = requireKey(options.settings);
  const { remembering } = await import('../../terminal/remembering.js');
  const { terminalSection } = await import('../settings-schema.js');
  const memory = options.memory;
  const kept = remembering(
    memory && terminalSection(memory.section, `profile "${memory.profile}" in ${memory.path}`),
    memory && { ...memory, write: (config) => writeConfig(memory.path, config as ConfigFile) },
  );
  const rules = await alertRules(options, kept.rules);
  const [{ TerminalModel }, { FrameStore }, { Session }, { enterScreen }, effects, { ExecHook }, { mountUi }, themes] =
    await Promise.all([
      import('../../terminal/model.js'),
      import('../../terminal/store.js'),
      import('../../terminal/session.js'),
      import('../../terminal/screen.js'),
      import('../../terminal/effects.js'),
      import('../exec-hook.js'),
      import('../../terminal/ui.js'),
      import('../../terminal/theme.js'),
    ]);
  const { supportsHyperlinks } = await import('../../render/hyperlinks.js');
  const hyperlinks = options.color && supportsHyperlinks(stdout, process.env);
  const model = new TerminalModel({
    capacity: options.buffer,
    ...(options.maxPins === undefined ? {} : { maxPins: options.maxPins }),
    rules,
    match: options.match,
    ...kept.model,
  });
  kept.start(model);
  const store = new FrameStore();
  /** Until the terminal has said its background (before the first frame). */
  let theme = themes.THEMES.dark;
  let markdown: MarkdownRenderer | undefined;
  let loadingMarkdown: Promise<void> | undefined;
  /** Loads `tree`'s markdown renderer once: soon after the start, or when a detail pane needs it first. */
  const loadMarkdown = () =>
    (loadingMarkdown ??= import('../../render/markdown.js').then(async ({ loadMarkdownRenderer }) => {
      const width = Math.max(20, (stdout.columns || 80) - 2);
      const render = await loadMarkdownRenderer({ color: options.color, width, hyperlinks, linkColour: theme.link });
      // The first renders of a table or a list pay for code paths not yet compiled, which can
      // push a post past the render budget into plain text: paid here, before any post's.
      for (let round = 0; round < 3; round++) render(WARM_UP);
      markdown = render;
      store.soon();
    }));
  const execHooks = new Map<AlertRule, InstanceType<typeof ExecHook>>();
  const say = (text: string) => {
    model.say(text);
    store.soon();
  };
  const bell = new effects.Bell((data) => stdout.write(data));
  const multiplexer = effects.multiplexerOf(process.env);
  /** A sequence for the terminal itself (clipboard, notification), past tmux or screen. */
  const toTerminal = (sequence: string) => stdout.write(effects.passedThrough(sequence, multiplexer));
  const onAlert = (effect: AlertEffect) => {
    if (effect.action === 'bell') bell.ring();
    else if (effect.action === 'notify') {
      // Each post its own notification; the bell that goes with them rings once for a burst.
      toTerminal(effects.notification(effect.entry.streamName, effect.entry.headline));
      bell.ring();
    } else if (effect.rule.command !== undefined) {
      let hook = execHooks.get(effect.rule);
      if (hook === undefined) {
        // The screen is the terminal's: what the command prints would draw over it.
        hook = new ExecHook(effect.rule.command, { apiKey, report: say, output: 'ignore' });
        execHooks.set(effect.rule, hook);
      }
      const event = { type: 'created' as const, history: false, format: 'post' as const, post: effect.post };
      hook.push(event, { event: 'stream.post.created', data: effect.post });
    }
  };
  const session = new Session({
    endpoints: options.settings.endpoints,
    apiKey,
    authQuery: options.authQuery,
    reconnect: options.reconnect,
    timeoutMs: options.timeoutMs,
    streams: options.streams,
    last: options.last,
    model,
    changed: () => store.soon(),
    onAlert,
    onSubscribed: () => {
      // The markdown renderer is the biggest load left: not while the first posts are drawn.
      setTimeout(() => void loadMarkdown(), MARKDOWN_AFTER_MS).unref();
      options.onSubscribed?.();
    },
  });

  const screen = enterScreen(stdout, stdin);
  let quit!: () => void;
  const quitting = new Promise<void>((resolve) => {
    quit = resolve;
  });
  const onEffect = (effect: NonNullable<KeyEffect>) => {
    const entry = model.selected();
    switch (effect.kind) {
      case 'quit':
        quit();
        return;
      case 'reconnect':
        session.reconnectNow();
        return;
      case 'suspend':
        return suspend();
      case 'copy': {
        if (entry === undefined) return;
        // Never an empty OSC 52: it would clear what the user had copied.
        const copied = effect.what === 'text' ? entry.text : entry.links[0];
        if (copied === null) return say('no text yet: the post is hidden until its release');
        if (copied === undefined || copied === '') return say(`no ${effect.what} to copy`);
        toTerminal(effects.clipboard(copied));
        const sent = effects.sentWords(effect.what, multiplexer);
        // The address last: a narrow footer cuts it, not what the user must know.
        return say(effect.what === 'text' ? sent : `${sent}: ${copied}`);
      }
      case 'open': {
        const link = entry?.links[effect.link - 1];
        if (link === undefined) return say(`no link ${effect.link} in this post`);
        say(`opening ${link}`);
        void effects.openUrl(link).then((opened) => say(opened ? `opened ${link}` : `no opener found: ${link}`));
      }
    }
  };
  /** Ctrl-Z: the terminal given back, the job stopped as the terminal's own Ctrl-Z stops it; back on SIGCONT. */
  const suspend = () => {
    let continued = false;
    const takeBack = () => {
      continued = true;
      process.on('SIGTSTP', suspend);
      screen.resume();
      mounted?.redraw();
    };
    screen.suspend();
    process.once('SIGCONT', takeBack);
    // Without a listener of ours, SIGTSTP does what it does by default: it stops the process.
    process.off('SIGTSTP', suspend);
    // The whole job (a wrapper such as npx too): the process is stopped before `kill` returns.
    process.kill(0, 'SIGTSTP');
    // SIGCONT is told before anything set now runs. None: the stop was discarded, as for a job
    // that no shell with job control started (its process group is orphaned).
    setImmediate(() => {
      if (continued) return;
      process.off('SIGCONT', takeBack);
      takeBack();
      say('Ctrl-Z: no shell with job control started this, so it cannot be suspended');
    });
  };
  const onSignal = () => quit();
  // A stop from outside (`kill -TSTP`, a job control of another kind) gives the terminal back first, as Ctrl-Z does.
  process.on('SIGTSTP', suspend);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  options.signal?.addEventListener('abort', onSignal);
  const ticker = setInterval(() => {
    model.tick();
    store.soon();
  }, 1000);
  let mounted: UiModule.Ui | undefined;
  let failure: unknown;
  try {
    // The connection opens while the terminal says its background colour.
    const running = session.run();
    running.catch(() => undefined);
    const noAnswer = () => Promise.resolve(undefined);
    theme = await themes.chooseTheme(
      options.theme,
      options.color ? () => themes.askBackground(stdin, stdout) : noAnswer,
      process.env,
    );
    mounted = mountUi(
      {
        model,
        store,
        service: wsWhere(options.settings),
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
        onEffect,
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
    bell.stop();
    store.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
    process.off('SIGTSTP', suspend);
    options.signal?.removeEventListener('abort', onSignal);
    mounted?.unmount();
    screen.restore();
    await session.stop();
    await kept.close();
    await Promise.all([...execHooks.values()].map((hook) => hook.close(true)));
  }
  if (failure !== undefined)
    throw commandFailure(failure, options.timeoutMs, `connected from ${wsWhere(options.settings)}`);
  return EXIT.ok;
}
