import type { ChalkInstance } from 'chalk';
import type { StreamColour } from '../render/style.js';
import type { HighlightColour } from './alerts.js';

export type ThemeName = 'dark' | 'light';
export const THEME_NAMES: readonly ThemeName[] = ['dark', 'light'];

/** A colour chalk has a function of the same name for. */
type Colour = StreamColour | 'blue' | 'red' | 'magentaBright';

/** The colours that depend on the background: the rest (inverse, dim, bold) read on both. */
export interface Theme {
  name: ThemeName;
  /** Coin tags and the link count at a row's end. */
  tag: Colour;
  /** Links in the detail pane. */
  link: 'blue' | 'blueBright';
  /** A stream's colour as this background shows it. */
  stream: (colour: StreamColour) => Colour;
}

// Yellow and cyan are faint on white: light backgrounds take darker neighbours.
const LIGHT_STREAMS: Record<StreamColour, Colour> = {
  cyan: 'blue',
  green: 'green',
  yellow: 'magentaBright',
  magenta: 'magenta',
  blueBright: 'blue',
  redBright: 'red',
};

export const THEMES: Record<ThemeName, Theme> = {
  // Bright blue, not blue: dark blue on black can hardly be read.
  dark: { name: 'dark', tag: 'yellow', link: 'blueBright', stream: (colour) => colour },
  light: { name: 'light', tag: 'magenta', link: 'blue', stream: (colour) => LIGHT_STREAMS[colour] },
};

/** A row's tags and link count: on a highlighted row (black on yellow) they take its colours, never yellow on yellow. */
export function tagStyle(c: ChalkInstance, theme: Theme, highlighted: boolean): ChalkInstance {
  return highlighted ? c.bold : c[theme.tag];
}

/** How a match is drawn: what opens it and what ends it. */
export interface Marks {
  open: string;
  close: string;
}

/**
 * How a highlight rule's colour draws what it matched: on the colour, in black or bright
 * white, whichever reads on it. A colour behind the text reads on a dark and a light
 * background alike.
 */
export function highlightMarks(c: ChalkInstance, colour: HighlightColour): Marks {
  const background = `bg${colour[0]!.toUpperCase()}${colour.slice(1)}` as 'bgRed';
  const light = colour === 'yellow' || colour === 'green' || colour === 'cyan';
  const [open = '', close = ''] = c[background][light ? 'black' : 'whiteBright'].bold('\u0000').split('\u0000');
  return { open, close };
}

/** `rgb:RRRR/GGGG/BBBB` (1 to 4 hex digits each, as terminals answer OSC 11) as light or dark. */
export function themeOfRgb(answer: string): ThemeName | undefined {
  const parts = /rgb:([0-9a-f]{1,4})\/([0-9a-f]{1,4})\/([0-9a-f]{1,4})/i.exec(answer);
  if (parts === null) return undefined;
  const [red, green, blue] = parts.slice(1, 4).map((hex) => Number.parseInt(hex, 16) / (16 ** hex.length - 1));
  // Relative luminance (Rec. 709 weights): above the middle is a light background.
  return 0.2126 * red! + 0.7152 * green! + 0.0722 * blue! > 0.5 ? 'light' : 'dark';
}

/** `COLORFGBG` (`15;0`, `0;default;15`): its last field is the background's colour number. */
export function themeOfColorFgBg(value: string | undefined): ThemeName | undefined {
  const background = Number(value?.split(';').pop());
  if (!Number.isInteger(background) || background < 0 || background > 15) return undefined;
  // 7 (light grey) and the bright colours but 8 (dark grey) are light backgrounds.
  return background === 7 || background > 8 ? 'light' : 'dark';
}

/** How long the terminal has to say its background colour. */
export const BACKGROUND_WAIT_MS = 100;

/**
 * Asks the terminal for its background colour (OSC 11) and waits up to BACKGROUND_WAIT_MS
 * for the answer; undefined when none came (a terminal that does not answer ignores it).
 * `stdin` must be in raw mode, or the answer would wait for Enter.
 */
export function askBackground(stdin: NodeJS.ReadStream, stdout: NodeJS.WriteStream): Promise<ThemeName | undefined> {
  return new Promise((resolve) => {
    let answer = '';
    const done = (theme: ThemeName | undefined) => {
      clearTimeout(timer);
      stdin.off('data', onData);
      stdin.pause();
      resolve(theme);
    };
    const onData = (data: Buffer | string) => {
      answer += data.toString();
      if (/\u001B\]11;[^\u0007\u001B]*(?:\u0007|\u001B\\)/.test(answer)) done(themeOfRgb(answer));
    };
    const timer = setTimeout(() => done(undefined), BACKGROUND_WAIT_MS);
    stdin.on('data', onData);
    stdin.resume();
    stdout.write('\u001B]11;?\u001B\\');
  });
}

/** The theme: `--theme`, else the terminal's answer, else COLORFGBG, else dark. */
export async function chooseTheme(
  given: ThemeName | undefined,
  ask: () => Promise<ThemeName | undefined>,
  env: NodeJS.ProcessEnv,
): Promise<Theme> {
  return THEMES[given ?? (await ask()) ?? themeOfColorFgBg(env['COLORFGBG']) ?? 'dark'];
}
