// graphql/: GraphQL subscriptions at /graphql (PROTOCOL.md B7), over the graphql-transport-ws
// protocol of the reference libraries. Loaded on the first /graphql upgrade only: `graphql`
// and `graphql-ws` are most of a chunk that start-up never reads.
import { buildSchema, GraphQLError } from 'graphql';
import { CloseCode, makeServer, type Context } from 'graphql-ws';
import type { WebSocket } from 'ws';
import { CLOSE_SLOW_CONSUMER } from '../../protocol/close-codes.js';
import { parseSubscribeArgs } from '../../protocol/commands.js';
import { ProtocolError } from '../../protocol/errors.js';
import type { Post } from '../../protocol/types.js';
import { checkedDocument } from './document-limits.js';
import type { FanOut, Holder, QueuedPost, Subscription, Subscriptions } from '../ws/fanout.js';
import type { KeyLimits } from '../ws/key-limits.js';
import type { Logger } from '../logger.js';
import type { TokenBucket } from '../ws/rate-limiter.js';
import type { KeepAlivePeer } from '../service/keep-alive.js';
import type { StreamPostsService } from '../service/service.js';
import { Refusal, type Admission } from '../service/subscriptions.js';

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
  subscriptions: Subscriptions;
  fanout: FanOut;
  logger: Logger;
  /** Each key's shared rate. */
  keyLimits: KeyLimits;
  createRateLimiter: (() => TokenBucket) | undefined;
  maxBufferedBytes: number;
}

const OPEN = 1;

/** One /graphql connection: what it knows once its key is checked, and its side of keep-alive. */
class Connection implements KeepAlivePeer {
  readonly id = 'graphql';
  admission: Admission | undefined = undefined;
  rateLimiter: TokenBucket | undefined = undefined;
  /** Operations streaming now; each ends (and leaves the fan-out) on `complete` or close. */
  readonly operations = new Set<PostFeed>();
  /** Answered the last keep-alive round's ping (or joined since it). */
  isAlive = true;

  constructor(
    readonly ws: WebSocket,
    /** The key from the upgrade request (header or query), for a client that sends no connectionParams. */
    public requestKey: string | undefined,
  ) {}

  get closed(): boolean {
    return this.ws.readyState !== OPEN;
  }

  /** A ping alone: graphql-transport-ws has no keep-alive event. */
  ping(): boolean {
    if (this.ws.readyState !== OPEN) return false;
    this.isAlive = false;
    this.ws.ping();
    return true;
  }

  terminate(): void {
    this.ws.terminate();
  }
}

type Extra = Connection;

/**
 * One GraphQL subscription's feed of posts: a fan-out Subscriber (so a post costs it what it
 * costs any WebSocket subscriber) turned into the async iterator graphql executes the
 * selection over.
 */
class PostFeed implements Holder, AsyncIterableIterator<Record<string, Post>> {
  envelopeStamp = 0;
  treeStamp = 0;
  readonly #waiting: Record<string, Post>[] = [];
  #wake: ((result: IteratorResult<Record<string, Post>>) => void) | undefined;
  #done = false;
  subscription: Subscription | undefined;

  get closed(): boolean {
    return this.#done;
  }

  /** The connection's operations: each is a subscription of its own, never a repeat of another. */
  get subscriptionCount(): number {
    return this.connection.operations.size;
  }

  repeatOf(): undefined {
    return undefined;
  }

  hold(subscription: Subscription): void {
    this.subscription = subscription;
  }

  /** Nothing to say: graphql-transport-ws has no acknowledgement but the first result. */
  acknowledge(): void {}

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
  /** The connections, for the server's keep-alive rounds. */
  peers(): Iterable<KeepAlivePeer>;
} {
  const { service, subscriptions } = context;
  const sockets = new Map<WebSocket, Connection>();

  async function feed(
    field: PostFeed['field'],
    args: Record<string, unknown>,
    ctx: Context<Record<string, unknown> | undefined, Extra>,
  ): Promise<AsyncIterableIterator<Record<string, Post>>> {
    const connection = ctx.extra;
    const posts = new PostFeed(field, connection, context);
    let subscribing: Promise<void> | undefined;
    try {
      subscribing = subscriptions.subscribe(posts, {
        identity: connection.admission!.identity,
        // As on /v1/ws, and checked by the same rules: each stream once, lastPosts in range.
        args: parseSubscribeArgs(
          { streamIds: args['streamIds'] ?? undefined, lastPosts: args['lastPosts'] ?? undefined },
          'on-stream-post',
        ),
        command: field,
        requestId: undefined,
        format: 'envelope',
        // Hidden posts per the hosted column of B1a: a created post once its text is there.
        hiddenPosts: field === 'streamPostCreated' ? 'at-release' : 'push',
      });
    } catch (error) {
      posts.end();
      if (error instanceof ProtocolError) throw graphqlError(error);
      throw error;
    }
    // The place is taken before the first await: a burst of subscribes all checked before
    // any was counted would pass the cap together.
    connection.operations.add(posts);
    try {
      await subscribing;
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
          service.streamsOf(ctx.extra.admission!.user).map(({ id, name }) => ({ id, name })),
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
      const admitted = await subscriptions.admit(key, connection);
      if (admitted === undefined) return false;
      if (admitted instanceof Refusal) {
        // No error event in graphql-transport-ws before the connection is acknowledged: the close says it.
        connection.ws.close(admitted.closeCode, admitted.message);
        return false;
      }
      connection.admission = admitted;
      connection.rateLimiter = context.createRateLimiter?.();
      return true;
    },
    onSubscribe(ctx, _id, payload) {
      const connection = ctx.extra;
      const keyBucket = connection.admission && context.keyLimits.bucket(connection.admission.keyId);
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
    if (connection) connection.isAlive = true;
  }

  return {
    accept(ws, requestKey) {
      const connection = new Connection(ws, requestKey);
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
        if (connection.admission !== undefined) subscriptions.leave(connection.admission.keyId);
        void closed(code, reason.toString());
      });
    },
    closeAll(code, reason) {
      for (const ws of sockets.keys()) ws.close(code, reason);
    },
    peers() {
      return sockets.values();
    },
    closeSubscribers(code, reason) {
      for (const [ws, connection] of sockets) if (connection.operations.size > 0) ws.close(code, reason);
    },
  };
}
