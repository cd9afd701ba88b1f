// graphql/: GraphQL subscriptions at /graphql (PROTOCOL.md B7), over the graphql-transport-ws
// protocol of the reference libraries. Loaded on the first /graphql upgrade only: `graphql`
// and `graphql-ws` are most of a chunk that start-up never reads.
import { buildSchema, GraphQLError } from 'graphql';
import { CloseCode, makeServer, type Context } from 'graphql-ws';
import type { WebSocket } from 'ws';
import { CLOSE_POLICY_VIOLATION, CLOSE_SLOW_CONSUMER, CLOSE_UNAUTHORIZED } from '../../protocol/close-codes.js';
import { ProtocolError, unauthorizedMessage } from '../../protocol/errors.js';
import { MAX_LAST_POSTS } from '../../protocol/limits.js';
import { splitStreamIds } from '../../protocol/stream-ids.js';
import type { Post } from '../../protocol/types.js';
import type { KeepAliveRound } from '../../protocol/admin.js';
import { checkedDocument } from './document-limits.js';
import { Subscription, type FanOut, type HiddenPosts, type QueuedPost, type Subscriber } from '../ws/fanout.js';
import { keyIdOf, type KeyLimits } from '../ws/key-limits.js';
import type { Logger } from '../logger.js';
import type { TokenBucket } from '../ws/rate-limiter.js';
import type { StreamPostsService } from '../service/service.js';
import type { Identity, UserRecord } from '../stores/store.js';

const SCHEMA = buildSchema(`
  type Post {
    id: ID!
    streamId: ID!
    streamName: String
    text: String
    contentType: String!
    createdAt: String!
    releaseAt: String
    hidden: Boolean!
    customTarget: String
  }
  type Stream {
    id: ID!
    name: String!
  }
  type Query {
    "The streams the key's user follows or owns."
    streams: [Stream!]!
  }
  type Subscription {
    "Each new post of the streams (default: all the user's), the last lastPosts of each first; a post published hidden comes at its release, with its text."
    streamPostCreated(streamIds: [ID!], lastPosts: Int): Post!
    "Each hidden post of the streams as its text becomes available."
    streamPostReleased(streamIds: [ID!]): Post!
  }
`);

export interface GraphqlContext {
  service: StreamPostsService;
  fanout: FanOut;
  logger: Logger;
  keyLimits: KeyLimits;
  createRateLimiter: (() => TokenBucket) | undefined;
  maxBufferedBytes: number;
  maxSubscriptionsPerConnection: number;
}

/** What one /graphql connection knows once its key is checked. */
interface Connection {
  ws: WebSocket;
  /** The key from the upgrade request (header or query), for a client that sends no connectionParams. */
  requestKey: string | undefined;
  identity?: Identity;
  user?: UserRecord;
  keyId?: string;
  rateLimiter?: TokenBucket | undefined;
  /** Operations streaming now; each ends (and leaves the fan-out) on `complete` or close. */
  operations: Set<PostFeed>;
  /** Answered the last keep-alive round's ping (or joined since it). */
  alive: boolean;
}

type Extra = Connection;

const OPEN = 1;

/**
 * One GraphQL subscription's feed of posts: a fan-out Subscriber (so a post costs it what it
 * costs any WebSocket subscriber) turned into the async iterator graphql executes the
 * selection over.
 */
class PostFeed implements Subscriber, AsyncIterableIterator<Record<string, Post>> {
  envelopeStamp = 0;
  treeStamp = 0;
  readonly #waiting: Record<string, Post>[] = [];
  #wake: ((result: IteratorResult<Record<string, Post>>) => void) | undefined;
  #done = false;
  subscription: Subscription | undefined;

  get ended(): boolean {
    return this.#done;
  }

  constructor(
    readonly field: 'streamPostCreated' | 'streamPostReleased',
    private readonly connection: Connection,
    private readonly context: GraphqlContext,
  ) {}

  sendFrame(frame: Buffer): void {
    this.#take(frame);
  }

  sendQueued(posts: QueuedPost[]): void {
    for (const queued of posts) this.#take(this.context.fanout.queuedFrame(queued));
  }

  #take(frame: Buffer): void {
    if (this.#done) return;
    const { event, data } = JSON.parse(frame.toString()) as { event: string; data: Post };
    // The release feed rides on a subscription that pushes hidden posts: only their releases are its business.
    if (this.field === 'streamPostReleased' && event !== 'stream.post.released') return;
    const value = { [this.field]: data };
    if (this.#wake) {
      const wake = this.#wake;
      this.#wake = undefined;
      wake({ value, done: false });
      return;
    }
    this.#waiting.push(value);
    // What graphql-ws has not taken yet, and what the socket has not sent, both count.
    const { ws } = this.connection;
    if (ws.bufferedAmount + this.#waiting.length * 256 > this.context.maxBufferedBytes) {
      this.context.logger.log('warn', 'closing slow GraphQL consumer', { bufferedBytes: ws.bufferedAmount });
      ws.close(CLOSE_SLOW_CONSUMER, 'slow consumer');
    }
  }

  next(): Promise<IteratorResult<Record<string, Post>>> {
    const value = this.#waiting.shift();
    if (value !== undefined) return Promise.resolve({ value, done: false });
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  return(): Promise<IteratorResult<Record<string, Post>>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  end(): void {
    if (this.#done) return;
    this.#done = true;
    if (this.subscription) this.context.fanout.remove(this.subscription);
    this.connection.operations.delete(this);
    this.#waiting.length = 0;
    this.#wake?.({ value: undefined, done: true });
    this.#wake = undefined;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** A ProtocolError as a GraphQL error: its message, and its code where clients branch on it. */
function graphqlError(error: ProtocolError): GraphQLError {
  return new GraphQLError(error.message, { extensions: { code: error.code } });
}

/** As on /v1/ws: each stream once, however often it is named (each would be its history again). */
function streamIdsArg(value: unknown): string[] {
  return Array.isArray(value) ? splitStreamIds(value.map(String)) : [];
}

/**
 * Hands a connection's messages to `handle` in order, one per event-loop turn. A message
 * costs up to a few ms of parsing and validation; a burst of them read in one chunk would
 * otherwise run back to back while every other connection and `/healthz` wait. While some
 * wait their turn the socket is paused, so what waits is at most what was already read.
 */
function oneMessagePerTurn(ws: WebSocket, handle: (text: string) => void): void {
  let waiting: string[] | undefined;
  const take = (text: string): void => {
    handle(text);
    setImmediate(() => {
      const next = waiting?.shift();
      if (next !== undefined) return take(next);
      waiting = undefined;
      ws.resume();
    });
  };
  ws.on('message', (data: Buffer) => {
    const text = data.toString();
    if (waiting === undefined) {
      waiting = [];
      take(text);
      return;
    }
    waiting.push(text);
    ws.pause();
  });
}

/** The GraphQL endpoint of one server: call `accept` with each upgraded socket. */
export function createGraphqlEndpoint(context: GraphqlContext): {
  accept(ws: WebSocket, requestKey: string | undefined): void;
  closeAll(code: number, reason: string): void;
  /** Closes the connections that hold an operation (events were missed; they must replay). */
  closeSubscribers(code: number, reason: string): void;
  /** The server's keep-alive round, on these connections: ping, or terminate who left the last ping unanswered. */
  keepAliveRound(): KeepAliveRound;
} {
  const { service, fanout, keyLimits } = context;
  const sockets = new Map<WebSocket, Connection>();

  async function feed(
    field: PostFeed['field'],
    args: Record<string, unknown>,
    ctx: Context<Record<string, unknown> | undefined, Extra>,
  ): Promise<AsyncIterableIterator<Record<string, Post>>> {
    const connection = ctx.extra;
    const max = context.maxSubscriptionsPerConnection;
    if (max !== 0 && connection.operations.size >= max) {
      throw new GraphQLError(`this connection already holds ${max} subscriptions, the most the server allows`, {
        extensions: { code: 'limit-exceeded' },
      });
    }
    const lastPosts = args['lastPosts'] ?? 0;
    if (typeof lastPosts !== 'number' || !Number.isInteger(lastPosts) || lastPosts < 0 || lastPosts > MAX_LAST_POSTS) {
      throw new GraphQLError(`lastPosts must be an integer from 0 to ${MAX_LAST_POSTS}`, {
        extensions: { code: 'invalid-argument' },
      });
    }
    let resolved;
    try {
      resolved = service.resolveStreams(connection.identity!, streamIdsArg(args['streamIds']), field);
    } catch (error) {
      if (error instanceof ProtocolError) throw graphqlError(error);
      throw error;
    }
    // The place is taken before the first await: a burst of subscribes all checked before
    // any was counted would pass the cap together.
    const posts = new PostFeed(field, connection, context);
    connection.operations.add(posts);
    try {
      // As on /v1/ws: what was acknowledged before this operation is history, not live.
      await service.caughtUp();
      // Completed, or its socket closed, while it waited: nothing to register.
      if (posts.ended) return posts;
      // Hidden posts per the hosted column of B1a: a created post once its text is there.
      const hiddenPosts: HiddenPosts = field === 'streamPostCreated' ? 'at-release' : 'push';
      const subscription = new Subscription(posts, 'envelope', resolved.user, resolved.streams, hiddenPosts);
      posts.subscription = subscription;
      // Registered before history is read, so nothing published meanwhile is missed.
      fanout.add(subscription);
      const read = field === 'streamPostCreated' && lastPosts > 0 ? await service.history(resolved, lastPosts) : [];
      fanout.goLive(
        subscription,
        read.filter((post) => !post.hidden),
      );
      return posts;
    } catch (error) {
      // A failed subscribe holds no place and leaves nothing in the fan-out.
      posts.end();
      throw error;
    }
  }

  const server = makeServer<Record<string, unknown> | undefined, Extra>({
    schema: SCHEMA,
    roots: {
      query: {
        streams: (_args: unknown, ctx: Context<Record<string, unknown> | undefined, Extra>) =>
          service.store.streamsOf(ctx.extra.user!.id).map(({ id, name }) => ({ id, name })),
      },
      subscription: {
        streamPostCreated: (args: Record<string, unknown>, ctx: Context<Record<string, unknown> | undefined, Extra>) =>
          feed('streamPostCreated', args, ctx),
        streamPostReleased: (args: Record<string, unknown>, ctx: Context<Record<string, unknown> | undefined, Extra>) =>
          feed('streamPostReleased', args, ctx),
      },
    },
    // The resolvers above receive the context itself, which carries the connection.
    context: (ctx) => ctx,
    async onConnect(ctx) {
      const connection = ctx.extra;
      const given = ctx.connectionParams?.['apiKey'];
      const key = typeof given === 'string' && given !== '' ? given : connection.requestKey;
      connection.requestKey = undefined;
      const identity = await service.authenticate(key);
      if (!identity) {
        connection.ws.close(CLOSE_UNAUTHORIZED, unauthorizedMessage(key));
        return false;
      }
      const keyId = keyIdOf(identity);
      if (!keyLimits.openConnection(keyId)) {
        connection.ws.close(CLOSE_POLICY_VIOLATION, 'too many connections for this key');
        return false;
      }
      connection.keyId = keyId;
      connection.identity = identity;
      connection.user = service.userOf(identity);
      connection.rateLimiter = context.createRateLimiter?.();
      return true;
    },
    onSubscribe(ctx, _id, payload) {
      const connection = ctx.extra;
      const keyBucket = connection.keyId === undefined ? undefined : keyLimits.bucket(connection.keyId);
      if (
        (connection.rateLimiter !== undefined && !connection.rateLimiter.tryTake()) ||
        (keyBucket !== undefined && !keyBucket.tryTake())
      ) {
        return [
          new GraphQLError('too many operations for this connection or key; slow down and retry', {
            extensions: { code: 'rate-limited' },
          }),
        ];
      }
      const document = checkedDocument(SCHEMA, payload);
      if (Array.isArray(document)) return document;
      return {
        schema: SCHEMA,
        document,
        operationName: payload.operationName,
        variableValues: payload.variables,
      };
    },
  });

  function onPong(this: WebSocket): void {
    const connection = sockets.get(this);
    if (connection) connection.alive = true;
  }

  return {
    accept(ws, requestKey) {
      const connection: Connection = { ws, requestKey, operations: new Set(), alive: true };
      sockets.set(ws, connection);
      ws.on('pong', onPong);
      const closed = server.opened(
        {
          protocol: ws.protocol,
          send: (data) =>
            new Promise<void>((resolve) => {
              if (ws.readyState !== OPEN) return resolve();
              ws.send(data, () => resolve());
            }),
          close: (code, reason) => ws.close(code, reason),
          onMessage: (handle) =>
            oneMessagePerTurn(ws, (text) =>
              handle(text).catch((error: unknown) => {
                context.logger.log('error', 'internal error', { via: 'graphql', reason: (error as Error).message });
                ws.close(CloseCode.InternalServerError, 'internal error');
              }),
            ),
        },
        connection,
      );
      ws.on('error', () => {});
      ws.once('close', (code, reason) => {
        sockets.delete(ws);
        for (const operation of [...connection.operations]) operation.end();
        if (connection.keyId !== undefined) keyLimits.closeConnection(connection.keyId);
        void closed(code, reason.toString());
      });
    },
    closeAll(code, reason) {
      for (const ws of sockets.keys()) ws.close(code, reason);
    },
    keepAliveRound() {
      const round: KeepAliveRound = { pinged: 0, terminated: 0 };
      for (const [ws, connection] of sockets) {
        if (!connection.alive) {
          context.logger.log('warn', 'terminating unresponsive peer', { via: 'graphql' });
          ws.terminate();
          round.terminated += 1;
        } else if (ws.readyState === OPEN) {
          connection.alive = false;
          ws.ping();
          round.pinged += 1;
        }
      }
      return round;
    },
    closeSubscribers(code, reason) {
      for (const [ws, connection] of sockets) if (connection.operations.size > 0) ws.close(code, reason);
    },
  };
}
