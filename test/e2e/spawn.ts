// What test/terminal/tmux.ts still imports from here; the helpers live in test/support/.
export { BIN } from '../support/cli.js';
