import { StreamPostsError } from '../index.js';
import {
  keyRefusedMessage,
  publishRestOrRefusal,
  commandFailure,
  describeNetworkError,
  outcomeOf,
  publishOptionsOf,
} from '../api/internal.js';
import { API_KEY_HEADER, STREAMS_PATH } from '../protocol/paths.js';
import type { CommonOptions } from './common.js';
import type { PublishSession } from './publish-one.js';
import { withoutKey } from './describe.js';

/**
 * Before the first question of an interactive `post --via rest`: one `GET /v1/streams`
 * with the key, so a stopped service or a refused key ends the command before anything
 * is typed.
 */
async function checkKeyOverRest(options: CommonOptions, apiKey: string): Promise<void> {
  const url = `${options.settings.endpoint.httpBase}${STREAMS_PATH}`;
  const shown = withoutKey(options.settings, url);
  const signal = AbortSignal.timeout(options.timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, { headers: { [API_KEY_HEADER]: apiKey }, signal });
  } catch (error) {
    if (signal.aborted)
      throw commandFailure(new StreamPostsError('timeout', 'no reply'), options.timeoutMs, `a reply to GET ${shown}`);
    const cause = (error as { cause?: Error & { code?: string } }).cause ?? (error as Error);
    throw new StreamPostsError('unreachable', `cannot reach ${shown}: ${describeNetworkError(cause)}`);
  }
  await response.body?.cancel();
  if (response.status === 401) {
    const refusal = { by: 'reply', detail: 'HTTP 401' } as const;
    throw new StreamPostsError('unauthorized', keyRefusedMessage(refusal), { status: 401, refusal });
  }
}

/** `post --via rest`, through the library's `publishRest`: no WebSocket is opened. */
export async function openRestSession(
  options: CommonOptions,
  apiKey: string,
  checkFirst: boolean,
): Promise<PublishSession> {
  if (checkFirst) await checkKeyOverRest(options, apiKey);
  const { httpBase } = options.settings.endpoint;
  return {
    streamId: undefined,
    serverTime: undefined,
    async publish(args) {
      try {
        return outcomeOf(
          await publishRestOrRefusal(options.settings.endpoints, {
            apiKey,
            timeoutMs: options.timeoutMs,
            ...publishOptionsOf(args),
          }),
        );
      } catch (error) {
        const awaited = `a reply to POST ${httpBase}${STREAMS_PATH}/${args.streamId}/post`;
        throw commandFailure(error, options.timeoutMs, withoutKey(options.settings, awaited));
      }
    },
    close: async () => {},
  };
}
