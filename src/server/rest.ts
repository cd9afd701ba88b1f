import type { IncomingMessage, ServerResponse } from 'node:http';
import { parsePublishArgs } from '../protocol/commands.js';
import { ProtocolError, UNAUTHORIZED_MESSAGE } from '../protocol/errors.js';
import { MAX_FRAME_BYTES, MAX_LAST_POSTS, REST_DEFAULT_LIMIT } from '../protocol/limits.js';
import { decodeSegment, keyFromRequest, parseJsonObject, readBody, sendError, sendJson } from './http-util.js';
import { keyIdOf, type KeyLimits } from './key-limits.js';
import type { FaultRegistry } from './faults.js';
import type { Logger } from './logger.js';
import type { TokenBucket } from './rate-limiter.js';
import type { StreamPostsService } from './service.js';
import type { StreamSummary } from '../protocol/types.js';
import { canSee, toWirePost, type Identity } from './store.js';
import { STREAMS_PATH } from '../protocol/paths.js';

export interface RestContext {
  service: StreamPostsService;
  logger: Logger;
  createRateLimiter: (() => TokenBucket) | undefined;
  bodyTimeoutMs: number;
  keyLimits: KeyLimits;
  faults: FaultRegistry;
}

const POST_ROUTE = /^\/v1\/streams\/([^/]+)\/post$/;
const POSTS_ROUTE = /^\/v1\/streams\/([^/]+)\/posts$/;
const LIMIT_PATTERN = /^\d+$/;

function methodNotAllowed(res: ServerResponse, allow: string): void {
  sendError(res, 'bad-request', `this endpoint accepts ${allow} only`, 405, { allow });
}

/** The REST surface (PROTOCOL.md B6). Returns false when no route matched. */
export function createRestHandler(context: RestContext) {
  const { service, logger } = context;
  const limiters = new Map<string, TokenBucket>();

  /** REST has no connection: the per-connection rate applies per key, and so does the key's shared one. */
  function withinRate(identity: Identity): boolean {
    const id = keyIdOf(identity);
    if (context.createRateLimiter) {
      let limiter = limiters.get(id);
      if (!limiter) {
        limiter = context.createRateLimiter();
        limiters.set(id, limiter);
      }
      if (!limiter.tryTake()) return false;
    }
    return context.keyLimits.bucket(id)?.tryTake() ?? true;
  }

  async function authenticate(req: IncomingMessage, url: URL): Promise<Identity> {
    const identity = await service.authenticate(keyFromRequest(req, url));
    if (!identity) throw new ProtocolError('unauthorized', UNAUTHORIZED_MESSAGE);
    if (!withinRate(identity))
      throw new ProtocolError('rate-limited', 'too many requests for this key; slow down and retry');
    return identity;
  }

  async function publish(req: IncomingMessage, res: ServerResponse, url: URL, streamId: string): Promise<void> {
    const identity = await authenticate(req, url);
    const fields = parseJsonObject(await readBody(req, MAX_FRAME_BYTES, context.bodyTimeoutMs));
    const args = parsePublishArgs({ ...fields, streamId });
    const injected = context.faults.onPublish(identity, args.streamId);
    const result = await service.publish(identity, args);
    if (injected !== undefined && context.faults.dropsAck(injected)) {
      logger.log('warn', 'reply dropped by an injected fault', {
        via: 'rest',
        stream: args.streamId,
        post: result.post.id,
      });
      req.socket.destroy();
      return;
    }
    logger.log('info', 'published', {
      via: 'rest',
      user: identity.userId,
      stream: result.post.streamId,
      post: result.post.id,
      duplicate: result.duplicate,
    });
    const post = toWirePost(result.post, true);
    if (result.duplicate) sendJson(res, 200, { post, duplicate: true });
    else sendJson(res, 201, { post });
  }

  async function listPosts(req: IncomingMessage, res: ServerResponse, url: URL, streamId: string): Promise<void> {
    const identity = await authenticate(req, url);
    const limitText = url.searchParams.get('limit');
    let limit = REST_DEFAULT_LIMIT;
    if (limitText !== null) {
      limit = LIMIT_PATTERN.test(limitText) ? Number(limitText) : NaN;
      if (!(limit >= 1 && limit <= MAX_LAST_POSTS)) {
        throw new ProtocolError('invalid-argument', `limit must be an integer from 1 to ${MAX_LAST_POSTS}`);
      }
    }
    const resolved = await service.resolveStreams(identity, [streamId], 'GET posts');
    const stream = resolved.streams[0]!;
    const posts = (await service.store.recent(stream.id, Number.MAX_SAFE_INTEGER))
      .filter((post) => canSee(resolved.user, stream, post))
      .slice(-limit)
      .reverse()
      .map((post) => toWirePost(post));
    sendJson(res, 200, { posts });
  }

  async function listStreams(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const identity = await authenticate(req, url);
    const [streams, user] = await Promise.all([
      service.store.streamsOf(identity.userId),
      service.store.user(identity.userId),
    ]);
    sendJson(res, 200, {
      streams: streams.map(({ id, name, owner, custom, customTargets }): StreamSummary => {
        const selected = custom && owner !== identity.userId ? user?.customTargets.get(id) : undefined;
        return {
          id,
          name,
          custom,
          customTargets: [...customTargets],
          owner,
          ...(custom && owner !== identity.userId ? { selectedTargets: [...(selected ?? [])] } : {}),
          publish: identity.streamId === id,
        };
      }),
    });
  }

  return async function handleRest(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    const postMatch = POST_ROUTE.exec(path);
    const postsMatch = POSTS_ROUTE.exec(path);
    if (!postMatch && !postsMatch && path !== STREAMS_PATH) return false;
    try {
      if (postMatch) {
        if (req.method !== 'POST') methodNotAllowed(res, 'POST');
        else await publish(req, res, url, decodeSegment(postMatch[1]!));
      } else if (postsMatch) {
        if (req.method !== 'GET') methodNotAllowed(res, 'GET');
        else await listPosts(req, res, url, decodeSegment(postsMatch[1]!));
      } else if (req.method !== 'GET') methodNotAllowed(res, 'GET');
      else await listStreams(req, res, url);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      logger.log('warn', 'request failed', { method: req.method, path, code: error.code, reason: error.message });
      sendError(res, error.code, error.message);
    }
    logger.log('debug', 'rest request', { method: req.method, path, status: res.statusCode });
    return true;
  };
}
