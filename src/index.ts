// The public API: what `import … from 'stream-posts'` gives. Nothing here may
// import the CLI or the terminal renderer, and importing must change no global state.
// The classes are exported as types only: users get them from startServer/connect, never `new`.
export { startServer } from './api/server.js';
export type {
  StreamPostsServer,
  RecordingServer,
  ProxiedFrame,
  StartServerOptions,
  ServerState,
  ServerKeys,
  ServerFaults,
  Fault,
  FaultInput,
  FaultScope,
  FaultScopeView,
  ConnectionInfo,
  KeepAliveRound,
  SeedInput,
  StateDocument,
  ScenarioPlayback,
  ScenarioStepResult,
  ScenarioSummary,
  ScenarioConversion,
  PlayOptions,
  ScenarioStart,
  Logger,
  LogLevel,
  LogFields,
  ReplayReport,
  Recording,
} from './api/server.js';
export { connect } from './api/client.js';
export type {
  StreamPostsClient,
  ConnectOptions,
  ClientState,
  TracedFrame,
  SubscribeOptions,
  SubscribedInfo,
  PostSubscription,
  SubscriptionEvent,
  PostEvent,
  TreeEvent,
  PublishOptions,
  PublishResult,
  Post,
  TreeItem,
  ContentType,
} from './api/client.js';
export { publishRest } from './api/rest.js';
export type { PublishRestOptions } from './api/rest.js';
export { fetchStreams, fetchStream, fetchPosts, setCustomTargets } from './api/rest-reads.js';
export type { RestReadOptions, RestStream } from './api/rest-reads.js';
export { scenarioFromListenRecording } from './api/scenario.js';
export { StreamPostsError, STREAM_POSTS_ERROR_CODES } from './api/errors.js';
export { isOptionError } from './api/options.js';
export type { OptionError } from './api/options.js';
export type { StreamPostsErrorCode } from './api/errors.js';
