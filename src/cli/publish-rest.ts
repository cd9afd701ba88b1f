import { publishRest } from '../api/rest.js';
import { ClientError, describeNetworkError, timeoutError } from '../client/errors.js';
import { API_KEY_HEADER, STREAMS_PATH } from '../protocol/paths.js';
import type { CommonOptions } from './common.js';
import { publishOptionsOf, refusalOf } from '../client/cli-words.js';
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
    if (signal.aborted) throw timeoutError(options.timeoutMs, `a reply to GET ${shown}`);
    const cause = (error as { cause?: Error & { code?: string } }).cause ?? (error as Error);
    throw new ClientError('unreachable', `cannot reach ${shown}: ${describeNetworkError(cause)}`);
  }
  await response.body?.cancel();
  if (response.status === 401) {
    throw new ClientError('unauthorized', 'the service refused the key: HTTP 401', 'unauthorized');
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
        const url = options.settings.endpoints.map((endpoint) => endpoint.httpBase);
        const { post, duplicate } = await publishRest({
          url,
          apiKey,
          timeoutMs: options.timeoutMs,
          ...publishOptionsOf(args),
        });
        return { ok: true, post, duplicate, attempts: 1 };
      } catch (error) {
        const awaited = `a reply to POST ${httpBase}${STREAMS_PATH}/${args.streamId}/post`;
        return refusalOf(error, options.timeoutMs, withoutKey(options.settings, awaited));
      }
    },
    close: async () => {},
  };
}
