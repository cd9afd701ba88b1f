import { execFile } from 'node:child_process';
import { platform as osPlatform } from 'node:os';
import type { Post } from '../protocol/types.js';
import { safeLine } from '../render/text.js';
import type { AlertRule } from './alerts.js';
import type { Entry } from './entry.js';
import type { AlertEffect, Remembered } from './model.js';

const BEL = '\u0007';
const MAX_NOTIFICATION = 200;

/** The shortest time between two bells. */
export const BELL_GAP_MS = 1000;

/**
 * The terminal bell (tmux, screen and most terminals flag or flash it), at most once a
 * second: a burst of matching posts rings once, and once more a second later when more
 * came meanwhile, not once per post.
 */
export class Bell {
  readonly #write: (data: string) => void;
  readonly #now: () => number;
  #lastMs = Number.NEGATIVE_INFINITY;
  #later: NodeJS.Timeout | undefined;

  constructor(write: (data: string) => void, now: () => number = Date.now) {
    this.#write = write;
    this.#now = now;
  }

  ring(): void {
    if (this.#later !== undefined) return;
    const wait = this.#lastMs + BELL_GAP_MS - this.#now();
    if (wait <= 0) return this.#sound();
    this.#later = setTimeout(() => {
      this.#later = undefined;
      this.#sound();
    }, wait);
  }

  #sound(): void {
    this.#lastMs = this.#now();
    this.#write(BEL);
  }

  stop(): void {
    clearTimeout(this.#later);
    this.#later = undefined;
  }
}

/**
 * A desktop notification: OSC 9 (iTerm2, WezTerm, Windows Terminal, kitty) and OSC 777
 * (foot, VTE, WezTerm); a terminal ignores the one it does not know. Every other terminal
 * has the bell, rung apart (`Bell`). The text is one safe line: no BEL or ESC can end the
 * sequence early.
 */
export function notification(title: string, body: string): string {
  const clean = (text: string) => safeLine(text).replace(/;/g, ',').slice(0, MAX_NOTIFICATION);
  return `\u001B]9;${clean(`${title}: ${body}`)}${BEL}\u001B]777;notify;${clean(title)};${clean(body)}${BEL}`;
}

/** The multiplexer between this process and the terminal, if any: it must be asked to pass sequences on. */
export type Multiplexer = 'tmux' | 'screen' | undefined;

export function multiplexerOf(env: NodeJS.ProcessEnv): Multiplexer {
  if ((env['TMUX'] ?? '') !== '') return 'tmux';
  if ((env['STY'] ?? '') !== '') return 'screen';
  return undefined;
}

/**
 * A sequence for the terminal outside a multiplexer, wrapped in its DCS passthrough: tmux's
 * (`ESC P tmux; … ESC \`, each ESC inside doubled; it passes it on where `allow-passthrough`
 * is on) or screen's (`ESC P … ESC \`). tmux and screen drop OSC 52, 9 and 777 otherwise.
 */
export function passedThrough(sequence: string, multiplexer: Multiplexer): string {
  if (multiplexer === 'tmux') return `\u001BPtmux;${sequence.replaceAll('\u001B', '\u001B\u001B')}\u001B\\`;
  if (multiplexer === 'screen') return `\u001BP${sequence}\u001B\\`;
  return sequence;
}

/**
 * What the footer says once a clipboard sequence went out: the terminal never answers it,
 * so it was sent, not known to be copied; in a multiplexer, the settings it takes.
 */
export function sentWords(what: 'link' | 'text', multiplexer: Multiplexer): string {
  if (multiplexer === 'tmux')
    return `${what} sent to the terminal (tmux passes it on with set-clipboard on or allow-passthrough on)`;
  if (multiplexer === 'screen') return `${what} sent to the terminal through screen (OSC 52)`;
  return `${what} sent to the terminal's clipboard (OSC 52)`;
}

/** OSC 52: the terminal puts the text on the system clipboard (over SSH too). */
export function clipboard(text: string): string {
  return `\u001B]52;c;${Buffer.from(text, 'utf8').toString('base64')}${BEL}`;
}

/** The system's opener for a URL, run without a shell. */
export function systemOpener(platform: NodeJS.Platform = osPlatform()): { file: string; args: string[] } {
  if (platform === 'darwin') return { file: 'open', args: [] };
  // `start` is a cmd.exe built-in, which would mean a shell: explorer opens a URL with the default browser.
  if (platform === 'win32') return { file: 'explorer.exe', args: [] };
  return { file: 'xdg-open', args: [] };
}

/**
 * Opens a web address with the system opener. Resolves with false when it could not be
 * run (none installed): the caller shows the address instead. An opener that ran and
 * failed has said why itself. Its output is discarded: it would draw over the screen.
 */
export function openUrl(url: string, opener = systemOpener()): Promise<boolean> {
  return new Promise((resolve) => {
    const child = execFile(opener.file, [...opener.args, url], { windowsHide: true }, (error) => {
      // A spawn failure has a string code (ENOENT, EACCES); an exit status is a number.
      resolve(error === null || typeof (error as { code?: unknown }).code === 'number');
    });
    child.stdin?.end();
  });
}

/** What a key asks of the world outside the model. */
export type KeyEffect =
  | { kind: 'quit' }
  | { kind: 'open'; link: number }
  | { kind: 'copy'; what: 'link' | 'text' }
  | { kind: 'reconnect' }
  | { kind: 'suspend' }
  | undefined;

/** What a step of the state asks of the world outside: a key's effect, or an alert rule's (bell, notify, exec). */
export type TerminalEffect =
  | NonNullable<KeyEffect>
  | (AlertEffect & { kind: AlertEffect['action'] })
  /** What the next session starts with changed: kept in the profile a moment later. */
  | { kind: 'save'; remembered: Remembered };

/** An alert rule's command, run for each post it matches (the CLI's exec hook). */
export interface AlertCommand {
  push(event: { type: 'created'; history: false; format: 'post'; post: Post }, frame: unknown): void;
  close(dropQueued: boolean): Promise<void>;
}

export interface EffectsOptions {
  /** The selected post, which a copy or an open is of. */
  selected: () => Entry | undefined;
  /** A line for the footer (through `update`): what an effect did, or why it could not. */
  say: (text: string) => void;
  /** Writes to the terminal. */
  write: (data: string) => void;
  env: NodeJS.ProcessEnv;
  quit: () => void;
  reconnect: () => void;
  suspend: () => void;
  /** Keeps what the next session starts with. */
  save: (remembered: Remembered) => void;
  /** Starts an alert rule's command: what it reports goes to the footer. */
  command: (command: string, report: (text: string) => void) => AlertCommand;
}

/**
 * The effects of keys and alerts, carried out: the clipboard and notifications (past tmux or
 * screen), the bell, the opener, the alert rules' commands, a reconnect, a quit.
 */
export class Effects {
  readonly #options: EffectsOptions;
  readonly #bell: Bell;
  readonly #multiplexer: Multiplexer;
  readonly #commands = new Map<AlertRule, AlertCommand>();

  constructor(options: EffectsOptions) {
    this.#options = options;
    this.#bell = new Bell(options.write);
    this.#multiplexer = multiplexerOf(options.env);
  }

  say(text: string): void {
    this.#options.say(text);
  }

  /** A sequence for the terminal itself (clipboard, notification), past tmux or screen. */
  #toTerminal(sequence: string): void {
    this.#options.write(passedThrough(sequence, this.#multiplexer));
  }

  /** Carries out what a step asked for. */
  carry(effect: TerminalEffect): void {
    if (effect.kind === 'bell' || effect.kind === 'notify' || effect.kind === 'exec') return this.#alert(effect);
    if (effect.kind === 'save') return this.#options.save(effect.remembered);
    const entry = this.#options.selected();
    switch (effect.kind) {
      case 'quit':
        return this.#options.quit();
      case 'reconnect':
        return this.#options.reconnect();
      case 'suspend':
        return this.#options.suspend();
      case 'copy': {
        if (entry === undefined) return;
        // Never an empty OSC 52: it would clear what the user had copied.
        const copied = effect.what === 'text' ? entry.text : entry.links[0];
        if (copied === null) return this.say('no text yet: the post is hidden until its release');
        if (copied === undefined || copied === '') return this.say(`no ${effect.what} to copy`);
        this.#toTerminal(clipboard(copied));
        const sent = sentWords(effect.what, this.#multiplexer);
        // The address last: a narrow footer cuts it, not what the user must know.
        return this.say(effect.what === 'text' ? sent : `${sent}: ${copied}`);
      }
      case 'open': {
        const link = entry?.links[effect.link - 1];
        if (link === undefined) return this.say(`no link ${effect.link} in this post`);
        this.say(`opening ${link}`);
        void openUrl(link).then((opened) => this.say(opened ? `opened ${link}` : `no opener found: ${link}`));
      }
    }
  }

  #alert(effect: AlertEffect): void {
    if (effect.action === 'bell') this.#bell.ring();
    else if (effect.action === 'notify') {
      // Each post its own notification; the bell that goes with them rings once for a burst.
      this.#toTerminal(notification(effect.entry.streamName, effect.entry.headline));
      this.#bell.ring();
    } else if (effect.rule.command !== undefined) {
      let command = this.#commands.get(effect.rule);
      if (command === undefined) {
        command = this.#options.command(effect.rule.command, (text) => this.say(text));
        this.#commands.set(effect.rule, command);
      }
      const event = { type: 'created' as const, history: false as const, format: 'post' as const, post: effect.post };
      command.push(event, { event: 'stream.post.created', data: effect.post });
    }
  }

  /** No bell still to ring. */
  silence(): void {
    this.#bell.stop();
  }

  /** The commands' queued posts dropped, once the running ones end. */
  async close(): Promise<void> {
    await Promise.all([...this.#commands.values()].map((command) => command.close(true)));
  }
}
