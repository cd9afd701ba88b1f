import { render } from 'ink';
import { createElement } from 'react';
import { App, type AppProps } from './app.js';

export interface Ui {
  unmount(): void;
  /** Settles when Ink stops drawing; rejects with the error when a render failed. */
  exited: Promise<unknown>;
}

/** Draws the app with Ink on the given terminal; keys are ours (Ctrl-C included), frames are the store's. */
export function mountUi(props: AppProps, stdout: NodeJS.WriteStream, stdin: NodeJS.ReadStream): Ui {
  const instance = render(createElement(App, props), {
    stdout,
    stdin,
    exitOnCtrlC: false,
    patchConsole: false,
    // The store already caps post-driven frames; a key must not wait for Ink's own throttle.
    maxFps: 1000,
    // Ink's incremental mode (only changed lines) left stale lines on this full-screen frame in tmux.
    incrementalRendering: false,
    onRender: ({ renderTime }) => props.store.drawn(renderTime),
  });
  return { unmount: () => instance.unmount(), exited: instance.waitUntilExit() };
}
