import type { StreamPostsClient } from '../index.js';
import {
  openClient,
  PUBLISH_MAX_ATTEMPTS,
  type ClientPolicy,
  commandFailure,
  outcomeOf,
  publishOptionsOf,
  type PublishOutcome,
} from '../api/internal.js';
import { usageError } from './exit.js';
import type { PublishArgs } from '../protocol/types.js';
import type { StatusReporter } from '../render/status.js';
import type { CommonOptions } from './common.js';
import { describeState } from './status.js';
import { wsWhere } from './describe.js';

/** A connection `post` checked before asking or sending anything, and publishes through. */
export interface PublishSession {
  /** The one stream the key publishes to, when the service said (`connected.streamId`). */
  readonly streamId: string | undefined;
  /** The service's clock at connection (`connected.serverTime`), when it said, however far off. */
  readonly serverTime: string | undefined;
  publish(args: PublishArgs): Promise<PublishOutcome>;
  close(): Promise<void>;
}

/**
 * `post` over the WebSocket, through the library's client: the CLI publishes with the
 * code its users call. With `listenFirst` (the stream is not known, or questions are to be
 * asked) it hears the service's first word before it returns: a refused key ends the
 * command before anything is asked, and a `connected` names a stream key's stream.
 * Otherwise the post goes as soon as the socket is open, and a refusal ends it all the
 * same. The library's errors name its options; here they become the CLI's own words
 * (what was awaited, with the flag's timeout) and exit codes.
 */
export async function openPublishSession(
  options: CommonOptions,
  apiKey: string,
  status: StatusReporter,
  listenFirst: boolean,
  /** How long `listenFirst` waits for the first word at most (default the library's). */
  firstWordGraceMs?: number,
): Promise<PublishSession> {
  const { endpoint } = options.settings;
  if (endpoint.treeFeed) {
    throw usageError(
      'a tree feed address (…/graphql?format=tree) only sends; publish with --via rest or to the service URL',
    );
  }
  const client = await openPostClient(options, apiKey, status, {
    awaitFirstWord: listenFirst,
    retryReplyTimeouts: true,
    ...(firstWordGraceMs === undefined ? {} : { firstWordGraceMs }),
  });
  return {
    streamId: client.streamId,
    serverTime: client.statedServerTime,
    async publish(args) {
      try {
        return outcomeOf(await client.publishOrRefusal(publishOptionsOf(args)));
      } catch (error) {
        throw commandFailure(
          error,
          options.timeoutMs,
          `ack (the reply to add-stream-post) from ${wsWhere(options.settings)}`,
        );
      }
    },
    close: () => client.close(),
  };
}

/** The library's client `post` and `post --batch` publish through; its failures in the CLI's words. */
export async function openPostClient(
  options: CommonOptions,
  apiKey: string,
  status: StatusReporter,
  policy: ClientPolicy,
): Promise<StreamPostsClient> {
  try {
    return await openClient(
      options.settings.endpoints,
      {
        apiKey,
        authQuery: options.authQuery,
        timeoutMs: options.timeoutMs,
        maxReconnectAttempts: PUBLISH_MAX_ATTEMPTS,
        onState: (state) => describeState(state, status),
        ...(options.trace === undefined ? {} : { onFrame: options.trace }),
      },
      policy,
    );
  } catch (error) {
    throw commandFailure(error, options.timeoutMs, `connected from ${wsWhere(options.settings)}`);
  }
}
