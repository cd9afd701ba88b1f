// What test/e2e/terminal.test.ts still imports from here; the helpers live in test/support/.
export { until } from '../support/poll.js';
