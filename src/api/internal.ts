/**
 * The command line's one way into the library beyond its public API (src/index.ts): what
 * the CLI, the demo, the terminal and the doctor need that a user of the package does not.
 * NOT PUBLIC: src/index.ts exports none of it, the package's types leave it out, and it may
 * change in any release. Everything a user could want too is public instead (the REST reads,
 * the scenario reader); what stays here is the command line's own plumbing: addresses parsed
 * once in the flags' words, a publish's outcome for the CLI to report, the flag table of
 * `serve`, and what `serve --workers` and `serve --record` need around startServer.
 * The test of the rooms (test/docs/imports.test.ts) holds src/cli, src/demo, src/terminal
 * and src/doctor to this file and src/index.ts. A name from here declared in a module the
 * public types reach carries `@internal`, so the package's declarations leave it out.
 */

// Addresses: parsed once where they enter (the flags, the settings), handed on as Endpoints.
export { DEFAULT_URL, LIBRARY_WORDS, splitUrls, type Endpoint } from '../client/endpoint.js';
export { serviceEndpoints } from './endpoints.js';

// A connection with the command line's policy, on addresses already parsed.
export { openClient, type ClientPolicy } from './client.js';
export { PUBLISH_MAX_ATTEMPTS } from '../client/publisher.js';
export { backoffDelay, type BackoffOptions } from '../client/backoff.js';
export { publishRestOrRefusal } from './rest.js';
export { fetchPostsFrom, fetchStreamFrom, fetchStreamsFrom, listStreams, setCustomTargetsAt } from './rest-reads.js';
export { StreamNames } from '../client/stream-names.js';

// A publish as the command line words and reports it.
export { commandFailure, outcomeOf, publishOptionsOf } from './cli-words.js';
export { PUBLISH_FIELDS } from './publish.js';
export type { PublishData, PublishOutcome } from '../client/publisher.js';
export type { RateLimitWait } from '../client/pacer.js';
export { commandFrame, setFields } from '../client/publish-args.js';
export { generateIdempotencyKey, withIdempotencyKey } from '../client/idempotency.js';
export { DEFAULT_TIMEOUT_MS, describeNetworkError, formatWait } from '../client/errors.js';
export { serviceTimeMs } from '../client/service-time.js';
export { keyRefusedMessage, redactSecrets } from './errors.js';
export { optionOf } from './options.js';

// `serve`: its flag table, and what it needs around startServer.
export {
  SERVE_OPTIONS,
  START_SERVER_OPTION_NAMES,
  STATE_NEEDS_MEMORY,
  type NumericOptionName,
  type ServeOption,
  type ServeOptionName,
} from './serve-options.js';
export { replaySpeedOf } from './replay-options.js';
export { checkStoreUrl } from './start-options.js';
export { startInstance } from './server.js';
export { startRecording } from './record-server.js';
export {
  DEFAULT_REDIS_PREFIX,
  parseSeedFile,
  prepareRedisStore,
  redactRedisUrl,
  storeErrorCode,
} from './serve-support.js';
export { createLogger, withFields, type LogFormat } from '../server/logger.js';
export type { PeerAnswer, PeerAnswers, PeerLink, PeerRequest } from '../server/admin/admin-peers.js';
export { DEMO_SEED } from '../server/service/demo-seed.js';
