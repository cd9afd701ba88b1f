import { connect, type StreamPostsClient } from '../api/client.js';
import { ClientError } from '../client/errors.js';
import { commandFailure, publishOptionsOf, refusalOf } from './library.js';
import { PUBLISH_MAX_ATTEMPTS, type PublishOutcome } from '../client/publisher.js';
import type { PublishArgs } from '../protocol/types.js';
import type { StatusReporter } from '../render/status.js';
import type { CommonOptions } from './common.js';
import { describeState } from './status.js';
import { wsUrls, wsWhere } from './describe.js';

/** A connection `post` checked before asking or sending anything, and publishes through. */
export interface PublishSession {
  /** The one stream the key publishes to, when the service said (`connected.streamId`). */
  readonly streamId: string | undefined;
  /** The service's clock at connection (`connected.serverTime`), when it said. */
  readonly serverTime: string | undefined;
  publish(args: PublishArgs): Promise<PublishOutcome>;
  close(): Promise<void>;
}

/**
 * `post` over the WebSocket, through the library's client: the CLI publishes with the
 * code its users call. Connecting checks the service and the key before anything is
 * asked or sent. The library's errors name its options; here they become the CLI's own
 * words (what was awaited, with the flag's timeout) and exit codes.
 */
export async function openPublishSession(
  options: CommonOptions,
  apiKey: string,
  status: StatusReporter,
): Promise<PublishSession> {
  const { endpoint } = options.settings;
  if (endpoint.treeFeed) {
    throw new ClientError(
      'usage',
      'a tree feed address (…/graphql?format=tree) only sends; publish with --via rest or to the service URL',
    );
  }
  let client: StreamPostsClient;
  try {
    client = await connect({
      url: wsUrls(options.settings),
      apiKey,
      authQuery: options.authQuery,
      timeoutMs: options.timeoutMs,
      maxReconnectAttempts: PUBLISH_MAX_ATTEMPTS,
      onState: (state) => describeState(state, status),
    });
  } catch (error) {
    throw commandFailure(error, options.timeoutMs, `connected from ${wsWhere(options.settings)}`);
  }
  return {
    streamId: client.streamId,
    serverTime: client.serverTime,
    async publish(args) {
      try {
        const { post, duplicate } = await client.publish(publishOptionsOf(args));
        return { ok: true, post, duplicate, attempts: 1 };
      } catch (error) {
        return refusalOf(
          error,
          options.timeoutMs,
          `ack (the reply to add-stream-post) from ${wsWhere(options.settings)}`,
        );
      }
    },
    close: () => client.close(),
  };
}
