import type { TerminalEffect } from './effects.js';
import { parseKeys, splitUnfinished } from './key-parser.js';
import type { FrameStore } from './store.js';
import { tooSmall, View, type ViewOptions } from './view.js';
import { update } from './update.js';
import { ScreenWriter } from './writer.js';

/** How long the start of a key's sequence waits for its end before it is taken as it is. */
const SEQUENCE_WAIT_MS = 50;
/**
 * How long after a frame drawn from the first rows only the rest are tried (a search's count):
 * long enough for the terminal to take the frame before this process works on (on a busy
 * machine they share the cores), short enough for the count to seem to come with it. Keys
 * typed meanwhile are counted once.
 */
const COUNT_AFTER_MS = 5;

export interface UiOptions extends ViewOptions {
  store: FrameStore;
  onEffect: (effect: TerminalEffect) => void;
}

export interface Ui {
  unmount(): void;
  /** Draws the whole frame again (the screen was given away and taken back). */
  redraw(): void;
  /** Rejects with the error when a frame or a key failed: the command ends, the terminal given back. */
  failed: Promise<never>;
}

/**
 * Draws the view on the given terminal: a key draws at once, posts when the store says
 * (at most 30 frames a second), a resize draws the whole screen again. Only the lines
 * that changed are written.
 */
export function mountUi(options: UiOptions, stdout: NodeJS.WriteStream, stdin: NodeJS.ReadStream): Ui {
  const { store } = options;
  const view = new View(options);
  const writer = new ScreenWriter((data) => stdout.write(data));
  let fail!: (error: unknown) => void;
  const failed = new Promise<never>((_, reject) => {
    fail = reject;
  });
  failed.catch(() => undefined);
  const size = () => ({ width: stdout.columns || 80, height: stdout.rows || 24 });

  let finishing: NodeJS.Timeout | undefined;
  /** The rows a frame did not need (a search's count), found once the frame is out, and drawn. */
  const finish = () => {
    finishing = undefined;
    try {
      // Only a search's count shows what the frame did not need.
      if (options.model.finishRows() && options.model.searching) store.now();
    } catch (error) {
      fail(error);
    }
  };
  const draw = () => {
    try {
      // Wall time: a terminal slow to take the frame (the write waits) is a cost too.
      const began = performance.now();
      const { width, height } = size();
      const frame = view.frame(width, height);
      writer.draw(frame.lines, width);
      for (const effect of update(options.model, { kind: 'drawn', placed: frame.placed }).effects)
        options.onEffect(effect);
      store.drawn(performance.now() - began);
      if (options.model.rowCount() === undefined) finishing ??= setTimeout(finish, COUNT_AFTER_MS);
    } catch (error) {
      fail(error);
    }
  };
  let unfinished = '';
  let waiting: NodeJS.Timeout | undefined;
  const onData = (data: string) => {
    clearTimeout(waiting);
    const [whole, rest] = splitUnfinished(unfinished + data);
    unfinished = rest;
    if (rest !== '')
      waiting = setTimeout(() => {
        unfinished = '';
        onKeys(rest);
      }, SEQUENCE_WAIT_MS);
    if (whole !== '') onKeys(whole);
  };
  const onKeys = (data: string) => {
    try {
      const { width, height } = size();
      const page = Math.max(1, height - 4);
      // While the window is too small nothing shows what a key would do: only leaving acts.
      const parsed = parseKeys(data);
      const acting = tooSmall(width, height)
        ? parsed.filter(([input, key]) => (key.ctrl === true ? input === 'c' || input === 'z' : input === 'q'))
        : parsed;
      view.keysIgnored += parsed.length - acting.length;
      const effects = acting.flatMap(
        ([input, key]) => update(options.model, { kind: 'key', input, key, pageRows: page }).effects,
      );
      store.now();
      for (const effect of effects) options.onEffect(effect);
    } catch (error) {
      fail(error);
    }
  };
  const onResize = () => {
    writer.invalidate();
    store.now();
  };

  const unsubscribe = store.subscribe(draw);
  stdout.on('resize', onResize);
  stdin.setEncoding('utf8');
  stdin.on('data', onData);
  stdin.resume();
  store.now();
  return {
    unmount: () => {
      unsubscribe();
      stdout.off('resize', onResize);
      stdin.off('data', onData);
      clearTimeout(waiting);
      clearTimeout(finishing);
      stdin.pause();
    },
    redraw: onResize,
    failed,
  };
}
