// What test/e2e/terminal.test.ts still imports from here; the helpers live in test/support/.
export { cliFixture } from '../support/serve.js';
export { runToEnd } from '../support/cli.js';
export { KEYS, publishToStream as publishWs } from '../support/harness.js';
export { TcpProxy } from '../support/proxy.js';
