import { publishRest } from '../api/rest.js';
import type { PublishOutcome } from '../client/publisher.js';
import { STREAMS_PATH } from '../protocol/paths.js';
import type { PublishArgs } from '../protocol/types.js';
import type { CommonOptions } from './common.js';
import { publishOptionsOf, refusalOf } from './library.js';

/** `post --via rest`, through the library's `publishRest`: no WebSocket is opened. */
export async function publishOverRest(
  options: CommonOptions,
  apiKey: string,
  args: PublishArgs,
): Promise<PublishOutcome> {
  const { httpBase } = options.settings.endpoint;
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
    return refusalOf(error, options.timeoutMs, `a reply to POST ${httpBase}${STREAMS_PATH}/${args.streamId}/post`);
  }
}
