import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProtocolError, unauthorizedMessage } from '../../protocol/errors.js';
import { MAX_FRAME_BYTES } from '../../protocol/limits.js';
import type { Clock } from '../clock.js';
import type { PublishHooks } from '../fault-hooks.js';
import { decodeSegment, keyFromRequest, parseJsonObject, readBody, sendError, sendJson } from '../http-util.js';
import { keyIdOf, type KeyLimits } from '../ws/key-limits.js';
import type { Logger } from '../logger.js';
import { loggedPath, MediaStore } from './media.js';
import type { MediaKeeper } from '../stores/media-keeper.js';
import type { TokenBucket } from '../ws/rate-limiter.js';
import { parseRestPublish, requestOrigin, withMedia } from './rest-publish.js';
import { listPosts } from './rest-posts.js';
import { listStreams, restStream, selectTargets, visibleStream } from './rest-streams.js';
import { releaseTime, type StreamPostsService } from '../service/service.js';
import { postFor } from '../service/visibility.js';
import type { Identity } from '../stores/store.js';

export interface RestContext {
  service: StreamPostsService;
  logger: Logger;
  createRateLimiter: (() => TokenBucket) | undefined;
  bodyTimeoutMs: number;
  keyLimits: KeyLimits;
  /** Injected faults (admin/faults.ts), let in at each publish. */
  faults: PublishHooks;
  /** The service clock: upload addresses lapse on it, so tests move it instead of waiting. */
  clock: Clock;
  /** Where uploads are kept: the store's (shared by every instance on it), else this process's memory. */
  media: MediaKeeper;
  /** How long an upload address takes uploads. */
  uploadWindowMs: number;
}

/** A selection of targets is a short list: this is plenty. */
const MAX_TARGETS_BODY_BYTES = 64 * 1024;

type Route = 'streams' | 'stream' | 'posts' | 'post' | 'custom-targets';
const ROUTE = /^\/v1\/streams(?:\/([^/]+)(?:\/(posts|post|custom-targets))?)?$/;
const METHODS: Record<Route, 'GET' | 'POST'> = {
  streams: 'GET',
  stream: 'GET',
  posts: 'GET',
  post: 'POST',
  'custom-targets': 'POST',
};

function methodNotAllowed(res: ServerResponse, allow: string): void {
  sendError(res, 'bad-request', `this endpoint accepts ${allow} only`, 405, { allow });
}

/** The REST surface (PROTOCOL.md B6). Returns false when no route matched. */
export function createRestHandler(context: RestContext) {
  const { service, logger } = context;
  const limiters = new Map<string, TokenBucket>();
  const media = new MediaStore(context.clock, context.media, service, context.uploadWindowMs);

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
    const key = keyFromRequest(req, url);
    const identity = await service.authenticate(key);
    if (!identity) throw new ProtocolError('unauthorized', unauthorizedMessage(key));
    if (!withinRate(identity))
      throw new ProtocolError('rate-limited', 'too many requests for this key; slow down and retry');
    return identity;
  }

  async function publish(req: IncomingMessage, res: ServerResponse, identity: Identity, streamId: string) {
    const fields = parseJsonObject(await readBody(req, MAX_FRAME_BYTES, context.bodyTimeoutMs));
    const { args, metadata, uploadMedia } = parseRestPublish(fields, streamId);
    if (fields['contentType'] === undefined || fields['contentType'] === null) {
      logger.log('debug', 'contentType not given: rawtext', { via: 'rest', stream: streamId });
    }
    const reservations =
      uploadMedia === undefined || uploadMedia.length === 0
        ? undefined
        : await media.reserve(
            uploadMedia,
            { streamId: args.streamId, releaseAt: releaseTime(args) },
            requestOrigin(req),
          );
    const injected = context.faults.onPublish(identity, args.streamId);
    let result;
    try {
      result = await service.publish(identity, args, withMedia(metadata, reservations));
    } finally {
      // Addresses for a post that was not stored (or was stored by an earlier request) are never given out.
      // Left open, they would only lapse unused.
      if (reservations && result?.duplicate !== false) await media.cancel(reservations).catch(() => {});
    }
    if (reservations && !result.duplicate) {
      // The post is stored: a store that cannot link its media to it now only keeps them longer.
      await media.attach(reservations, result.post.id).catch((error: unknown) => {
        logger.log('warn', 'media not linked to their post', {
          post: result.post.id,
          reason: (error as Error).message,
        });
      });
    }
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
    // Only the stream's key publishes: its reply is the owner's.
    const post = postFor(result.post, 'owner');
    if (result.duplicate) sendJson(res, 200, { post, duplicate: true });
    else {
      // Declared items of a type not taken get no address: an empty list says so.
      const uploads =
        uploadMedia === undefined
          ? undefined
          : (reservations ?? []).map(({ type, uploadUrl }) => ({ type, url: uploadUrl }));
      sendJson(res, 201, { post, ...(uploads ? { mediaUploadURLs: uploads } : {}) });
    }
  }

  async function route(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    kind: Route,
    streamId: string | undefined,
  ): Promise<void> {
    const identity = await authenticate(req, url);
    switch (kind) {
      case 'streams':
        return sendJson(res, 200, await listStreams(service, identity, url));
      case 'stream': {
        const { stream, user } = await visibleStream(service, identity, streamId!);
        return sendJson(res, 200, restStream(stream, user, identity));
      }
      case 'posts':
        return sendJson(res, 200, await listPosts(service, identity, streamId!, url));
      case 'post':
        return publish(req, res, identity, streamId!);
      case 'custom-targets': {
        const body = parseJsonObject(await readBody(req, MAX_TARGETS_BODY_BYTES, context.bodyTimeoutMs));
        const selected = await selectTargets(service, identity, streamId!, body);
        logger.log('info', 'custom targets selected', {
          user: identity.userId,
          stream: streamId,
          targets: selected.customTargets.length,
        });
        return sendJson(res, 200, selected);
      }
    }
  }

  return async function handleRest(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const match = ROUTE.exec(url.pathname);
    const path = loggedPath(url.pathname);
    try {
      if (!match) {
        if (!(await media.handle(req, res, url, context.bodyTimeoutMs))) return false;
      } else {
        const kind: Route = match[1] === undefined ? 'streams' : ((match[2] as Route | undefined) ?? 'stream');
        if (req.method !== METHODS[kind]) methodNotAllowed(res, METHODS[kind]);
        else await route(req, res, url, kind, match[1] === undefined ? undefined : decodeSegment(match[1]));
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      logger.log('warn', 'request failed', { method: req.method, path, code: error.code, reason: error.message });
      sendError(res, error.code, error.message);
    }
    logger.log('debug', 'rest request', { method: req.method, path, status: res.statusCode });
    return true;
  };
}
