import { connect, type StreamPostsClient } from '../api/client.js';
import { ClientError } from '../client/errors.js';
import { publishOptionsOf, refusalOf } from './library.js';
import { PUBLISH_MAX_ATTEMPTS, type PublishOutcome } from '../client/publisher.js';
import type { PublishArgs } from '../protocol/types.js';
import type { StatusReporter } from '../render/status.js';
import type { CommonOptions } from './common.js';
import { describeState } from './status.js';
import { wsUrls, wsWhere } from './describe.js';

/**
 * `post` over the WebSocket, through the library's client: the CLI publishes with the
 * code its users call. The library's errors name its options; here they become the
 * CLI's own words (what was awaited, with the flag's timeout) and exit codes.
 */
export async function publishOverClient(
  options: CommonOptions,
  apiKey: string,
  args: PublishArgs,
  status: StatusReporter,
): Promise<PublishOutcome> {
  const { endpoint } = options.settings;
  if (endpoint.treeFeed) {
    throw new ClientError(
      'usage',
      'a tree feed address (…/graphql?format=tree) only sends; publish with --via rest or to the service URL',
    );
  }
  let client: StreamPostsClient | undefined;
  try {
    client = await connect({
      url: wsUrls(options.settings),
      apiKey,
      authQuery: options.authQuery,
      timeoutMs: options.timeoutMs,
      maxReconnectAttempts: PUBLISH_MAX_ATTEMPTS,
      onState: (state) => describeState(state, status),
    });
    const { post, duplicate } = await client.publish(publishOptionsOf(args));
    return { ok: true, post, duplicate, attempts: 1 };
  } catch (error) {
    const awaited = client === undefined ? 'connected' : 'ack (the reply to add-stream-post)';
    return refusalOf(error, options.timeoutMs, `${awaited} from ${wsWhere(options.settings)}`);
  } finally {
    await client?.close();
  }
}
