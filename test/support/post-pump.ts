import WebSocket from 'ws';
import { Arrivals } from './arrivals.js';

export interface PumpedPost {
  seq: number;
  streamId: string;
  content: string;
  /** The acknowledged post's id; undefined if no ack came (the connection dropped first). */
  id?: string;
}

interface PumpStream {
  id: string;
  key: string;
}

/** A publishing connection with a stream key: one command at a time, answered by requestId. */
class PumpConnection {
  readonly #pending = new Map<string, (reply: any) => void>();
  closed = false;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString());
      const resolve = message.requestId !== undefined ? this.#pending.get(message.requestId) : undefined;
      if (resolve) {
        this.#pending.delete(message.requestId);
        resolve(message);
      }
    });
    ws.on('close', () => {
      this.closed = true;
      for (const resolve of this.#pending.values()) resolve(undefined);
      this.#pending.clear();
    });
  }

  /** Resolves with the reply, or undefined when the connection ended first. */
  request(event: string, data: unknown, requestId: string): Promise<any> {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.#pending.set(requestId, resolve);
      this.ws.send(JSON.stringify({ event, data, requestId }));
    });
  }
}

function openPumpConnection(url: string, key: string): Promise<PumpConnection | undefined> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url}/v1/ws`, { headers: { 'x-api-key': key } });
    ws.on('error', () => {});
    ws.once('close', () => resolve(undefined));
    ws.once('message', (data) => {
      const message = JSON.parse(data.toString());
      if (message.event === 'connected') resolve(new PumpConnection(ws));
      else {
        ws.terminate();
        resolve(undefined);
      }
    });
  });
}

/**
 * Publishes posts one after another (round robin over the streams, `intervalMs`
 * apart) to whatever serve answers on `url`, reconnecting when it goes away,
 * and records each post with its ack. A post whose connection dropped before
 * the ack is not sent again (it has no idempotency key): its fate is unknown.
 */
export class PostPump {
  readonly posts: PumpedPost[] = [];
  readonly #connections = new Map<string, PumpConnection>();
  readonly #arrivals = new Arrivals();
  #stopping = false;
  #closed = false;
  #running: Promise<void> | undefined;

  constructor(
    readonly url: string,
    readonly streams: PumpStream[],
    readonly label: string,
    readonly intervalMs = 20,
  ) {}

  /** Posts acknowledged so far. */
  get acked(): number {
    return this.posts.filter((post) => post.id !== undefined).length;
  }

  start(): this {
    this.#running = this.#run();
    return this;
  }

  /** Waits until `count` posts in all have been acknowledged. */
  async waitForAcked(count: number, what: string, timeoutMs = 60_000): Promise<void> {
    await this.#arrivals.until(
      () => this.acked >= count,
      timeoutMs,
      () => new Error(`timed out waiting for ${what} (${this.acked}/${count} posts acknowledged)`),
    );
  }

  /** Stops after the post in flight. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#running;
  }

  /** Publishes one post to each stream, in order, each acknowledged (retrying the connection, never the post). */
  async publishEach(prefix: string): Promise<PumpedPost[]> {
    const posts: PumpedPost[] = [];
    for (const stream of this.streams) {
      const post = await this.#publish(stream, `${prefix} ${stream.id}`);
      if (post.id === undefined) throw new Error(`no ack for ${post.content}`);
      posts.push(post);
    }
    return posts;
  }

  /** Stops at once and drops the connections (for cleanup). */
  async close(): Promise<void> {
    this.#stopping = true;
    this.#closed = true;
    for (const connection of this.#connections.values()) connection.ws.terminate();
    this.#connections.clear();
    await this.#running?.catch(() => {});
  }

  async #run(): Promise<void> {
    let turn = 0;
    while (!this.#stopping) {
      const stream = this.streams[turn % this.streams.length]!;
      turn += 1;
      await this.#publish(stream, `${this.label} #${this.posts.length + 1} on ${stream.id}`);
      await new Promise((resolve) => setTimeout(resolve, this.intervalMs));
    }
  }

  async #connection(stream: PumpStream): Promise<PumpConnection> {
    for (;;) {
      if (this.#closed) throw new Error('the post pump was closed');
      const open = this.#connections.get(stream.id);
      if (open && !open.closed) return open;
      this.#connections.delete(stream.id);
      const connection = await openPumpConnection(this.url, stream.key);
      if (connection && this.#closed) connection.ws.terminate();
      else if (connection) {
        this.#connections.set(stream.id, connection);
        return connection;
      }
      // serve is down: try again shortly (a retry interval, not a wait for an event).
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  async #publish(stream: PumpStream, content: string): Promise<PumpedPost> {
    const connection = await this.#connection(stream);
    const post: PumpedPost = { seq: this.posts.length + 1, streamId: stream.id, content };
    this.posts.push(post);
    const reply = await connection.request(
      'add-stream-post',
      { streamId: stream.id, content, contentType: 'rawtext' },
      `p${post.seq}`,
    );
    if (reply?.event === 'ack') post.id = reply.data.post.id;
    else if (reply !== undefined) throw new Error(`publish refused: ${JSON.stringify(reply)}`);
    this.#arrivals.notify();
    return post;
  }
}
