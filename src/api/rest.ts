import { publishRest as postOverHttp } from '../client/rest.js';
import { mayBePublished } from '../client/errors.js';
import { fromClientError, StreamPostsError } from './errors.js';
import { checkKnownOptions, requiredString, timeoutOption } from './options.js';
import { checkEndpoints, type Endpoint } from './endpoints.js';
import {
  PUBLISH_OPTIONS,
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

const PUBLISH_REST_OPTIONS = [...PUBLISH_OPTIONS, 'url', 'apiKey'] as const;

/**
 * Publishes one post with the REST form (`POST /v1/streams/{id}/post`), opening no
 * WebSocket: for a script or a serverless function that publishes and is done. A refused
 * connection, 429 and 502-504 are retried a few times with the same idempotency key, on the
 * next url of a list.
 */
export async function publishRest(options: PublishRestOptions): Promise<PublishResult> {
  const given = checkKnownOptions('publishRest', options, PUBLISH_REST_OPTIONS);
  const answer = await publishRestOrRefusal(checkEndpoints(given), options);
  if (answer instanceof StreamPostsError) throw answer;
  return answer;
}

/**
 * `publishRest` to addresses already parsed, the service's refusal of the post resolved as
 * its error instead of thrown (the CLI reports it as an outcome); a failure to reach the
 * service or a wait still rejects.
 * @internal
 */
export async function publishRestOrRefusal(
  endpoints: readonly Endpoint[],
  options: Omit<PublishRestOptions, 'url'>,
): Promise<PublishResult | StreamPostsError> {
  const given = options as Record<string, unknown>;
  const apiKey = requiredString(given, 'apiKey');
  const timeoutMs = timeoutOption(given);
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
