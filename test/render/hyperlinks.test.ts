import { describe, expect, it } from 'vitest';
import { supportsHyperlinks } from '../../src/render/tree.js';

const tty = { isTTY: true } as NodeJS.WriteStream;
const pipe = { isTTY: false } as NodeJS.WriteStream;

describe('supportsHyperlinks', () => {
  it.each<[string, NodeJS.WriteStream, NodeJS.ProcessEnv, boolean]>([
    ['FORCE_HYPERLINK=1 even on a pipe', pipe, { FORCE_HYPERLINK: '1' }, true],
    ['FORCE_HYPERLINK=0 beats a known terminal', tty, { FORCE_HYPERLINK: '0', TERM_PROGRAM: 'WezTerm' }, false],
    ['a pipe', pipe, { TERM_PROGRAM: 'WezTerm' }, false],
    ['an unknown terminal', tty, { TERM: 'xterm-256color' }, false],
    ['Apple Terminal', tty, { TERM_PROGRAM: 'Apple_Terminal' }, false],
    ['iTerm 3.4', tty, { TERM_PROGRAM: 'iTerm.app', TERM_PROGRAM_VERSION: '3.4.19' }, true],
    ['iTerm 3.0', tty, { TERM_PROGRAM: 'iTerm.app', TERM_PROGRAM_VERSION: '3.0.15' }, false],
    ['iTerm without a version', tty, { TERM_PROGRAM: 'iTerm.app' }, false],
    ['WezTerm', tty, { TERM_PROGRAM: 'WezTerm' }, true],
    ['ghostty', tty, { TERM_PROGRAM: 'ghostty' }, true],
    ['VS Code 1.95', tty, { TERM_PROGRAM: 'vscode', TERM_PROGRAM_VERSION: '1.95.3' }, true],
    ['VS Code 1.60', tty, { TERM_PROGRAM: 'vscode', TERM_PROGRAM_VERSION: '1.60.0' }, false],
    ['VTE 0.50', tty, { VTE_VERSION: '5000' }, true],
    ['VTE 0.48', tty, { VTE_VERSION: '4803' }, false],
    ['VTE in a dotted form', tty, { VTE_VERSION: '0.50.0' }, false],
    ['Windows Terminal', tty, { WT_SESSION: 'b2d8c6e4' }, true],
    ['kitty', tty, { TERM: 'xterm-kitty' }, true],
    [
      'kitty inside tmux',
      tty,
      { TERM: 'tmux-256color', KITTY_WINDOW_ID: '1', TMUX: '/tmp/tmux-1000/default,1,0' },
      false,
    ],
    ['screen', tty, { TERM: 'screen-256color', WT_SESSION: 'x' }, false],
    ['a dumb terminal', tty, { TERM: 'dumb', WT_SESSION: 'x' }, false],
  ])('%s', (_name, stream, env, expected) => {
    expect(supportsHyperlinks(stream, env)).toBe(expected);
  });
});
