import { publishRest as postOverHttp } from '../client/rest.js';
import { mayBePublished } from '../client/errors.js';
import { fromClientError, StreamPostsError } from './errors.js';
import type { Endpoint } from '../client/endpoint.js';
import { libraryEndpoints } from './endpoints.js';
import {
  LIBRARY_TIMEOUT_MS,
  OptionTable,
  optional,
  requiredText,
  TIMEOUT_OPTION,
  URL_OPTION,
  type TableValues,
} from './option-table.js';
import {
  POST_OPTIONS,
  publishResult,
  readPublishOptions,
  refusalAsValue,
  type PublishOptions,
  type PublishResult,
} from './publish.js';

export interface PublishRestOptions extends PublishOptions {
  /**
   * The service: `server.httpUrl`, or any url `connect` takes (`ws(s)://`, with or without
   * `/v1/ws`); or several instances of it, tried in turn when one is unreachable or answers 502-504.
   */
  url: string | readonly string[];
  /** The stream's key. */
  apiKey: string;
}

/** publishRest's options but the addresses (the CLI's come already parsed). */
const REST_OPTIONS = { ...POST_OPTIONS, ...optional({ timeoutMs: TIMEOUT_OPTION }), apiKey: requiredText };
const PUBLISH_REST = new OptionTable('publishRest', { ...REST_OPTIONS, url: URL_OPTION });
const PUBLISH_REST_AT = new OptionTable('publishRest', REST_OPTIONS);

/**
 * Publishes one post with the REST form (`POST /v1/streams/{id}/post`), opening no
 * WebSocket: for a script or a serverless function that publishes and is done. A refused
 * connection, 429 and 502-504 are retried a few times with the same idempotency key, on the
 * next url of a list.
 */
export async function publishRest(options: PublishRestOptions): Promise<PublishResult> {
  const { url, ...given } = PUBLISH_REST.check(options);
  const answer = await publishChecked(libraryEndpoints(url), given);
  if (answer instanceof StreamPostsError) throw answer;
  return answer;
}

/**
 * `publishRest` to addresses already parsed, the service's refusal of the post resolved as
 * its error instead of thrown (the CLI reports it as an outcome); a failure to reach the
 * service or a wait still rejects. For the CLI (internal.ts).
 */
export function publishRestOrRefusal(
  endpoints: readonly Endpoint[],
  options: Omit<PublishRestOptions, 'url'>,
): Promise<PublishResult | StreamPostsError> {
  return publishChecked(endpoints, PUBLISH_REST_AT.check(options));
}

async function publishChecked(
  endpoints: readonly Endpoint[],
  given: TableValues<typeof REST_OPTIONS>,
): Promise<PublishResult | StreamPostsError> {
  const { apiKey, timeoutMs = LIBRARY_TIMEOUT_MS } = given;
  const data = readPublishOptions(given);
  const secrets = [apiKey, encodeURIComponent(apiKey)];
  let outcome;
  try {
    outcome = await postOverHttp(endpoints, apiKey, data, { timeoutMs });
  } catch (error) {
    const failure = fromClientError(error, secrets);
    if (failure.code !== 'timeout') throw failure;
    // The request went and no reply came: the post may be stored, and its key is how to find out.
    const { idempotencyKey } = data;
    throw new StreamPostsError('timeout', `${failure.message}; ${mayBePublished(idempotencyKey)}`, {
      cause: failure.cause,
      ...(failure.awaited === undefined ? {} : { awaited: failure.awaited }),
      idempotencyKey,
    });
  }
  return refusalAsValue(() => publishResult(outcome, data.idempotencyKey, secrets));
}
