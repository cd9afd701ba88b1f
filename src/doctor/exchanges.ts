// The exchanges the doctor's checks are made of: a subscribe and the history after it, a tree
// feed read as the Tree family reads it, the graphql-ws handshake, a marked test post. Each
// opens its own connections, bounded by the target's deadline.
import { dataOf, eventOf, rest, Wire, type Exchanges, type Frame, type Target } from './wire.js';

export type Level = 'MUST' | 'SHOULD' | 'MAY';

/** What a check saw. A field left undefined could not be seen here, and is not compared. */
export type Observation = Record<string, string | number | boolean | null | undefined>;

/** A check that cannot run against this service, and why. */
export class Skip extends Error {
  override name = 'Skip';
}

/** What one run of the checks learns of a service and shares between them. */
export interface Probe {
  target: Target;
  log: Exchanges;
  /** `--allow-writes --stream ID`: the one stream the checks may write to. */
  writeStream: string | undefined;
  /** The streams a subscribe without `streamIds` resolved to (subscribe.omitted). */
  streams?: string[];
}

export const WS_PATH = '/v1/ws';
export const TEST_TEXT = 'stream-posts doctor: conformance test post, please ignore';
/** How long a check listens for frames that may or may not come (history, a refusal). */
const QUIET_MS = 1000;

const keyHeader = (probe: Probe) => ({ 'x-api-key': probe.target.apiKey });
const isPost = (frame: Frame) => eventOf(frame) === 'stream.post.created';
const isTreeItem = (frame: Frame) =>
  frame.json !== null && typeof frame.json === 'object' && !Array.isArray(frame.json) && eventOf(frame) === undefined;
const isReply = (frame: Frame) => ['sub_ack', 'error', 'ack'].includes(eventOf(frame) ?? '');

/** Runs `body` on a connection that is closed afterwards, whatever happens. */
export async function connected<T>(
  probe: Probe,
  options: Parameters<typeof Wire.open>[2],
  body: (wire: Wire) => Promise<T>,
) {
  const wire = await Wire.open(probe.target, probe.log, options);
  try {
    return await body(wire);
  } finally {
    wire.close();
  }
}

/** A bare `/v1/ws` connection with the key in the header. */
export const bare = <T>(probe: Probe, body: (wire: Wire) => Promise<T>, query?: Record<string, string>) =>
  connected(probe, { path: WS_PATH, headers: keyHeader(probe), ...(query ? { query } : {}) }, body);

/** Sends a subscribe on a fresh bare connection and reads its reply and the history after it. */
export async function subscribe(probe: Probe, data: Record<string, unknown>, event = 'on-stream-post') {
  return bare(probe, async (wire) => {
    await wire.next((frame) => eventOf(frame) === 'connected', 0, QUIET_MS);
    const from = wire.received.length;
    wire.sendJson({ event, data });
    const reply = await wire.next(isReply, from);
    const at = reply === undefined ? from : wire.received.indexOf(reply) + 1;
    const history = () => wire.received.slice(at).filter(event === 'on-stream-post' ? isPost : isTreeItem);
    // History follows the reply at once: `sub_ack.history` says how much where the service counts
    // it (more than that is waited for a moment, in case it sends too much); else a quiet second ends it.
    const counted = dataOf(reply)['history'];
    if (typeof counted === 'number') {
      await wire.until(() => history().length >= counted);
      await wire.until(() => history().length > counted, QUIET_MS / 4);
    } else {
      let count = -1;
      while (count !== wire.received.length - at) {
        count = wire.received.length - at;
        await wire.until(() => wire.received.length - at > count, QUIET_MS);
      }
    }
    return { reply, history: history() };
  });
}

/**
 * The key's streams: `connected.data.streams` where the service lists them, else what a
 * subscribe without `streamIds` resolved to, else the REST list's followed streams.
 */
export async function needStreams(probe: Probe): Promise<string[]> {
  probe.streams ??= await bare(probe, async (wire) => {
    const listed = dataOf(await wire.next((frame) => eventOf(frame) === 'connected', 0, QUIET_MS))['streams'];
    return Array.isArray(listed) ? listed.filter((id): id is string => typeof id === 'string') : undefined;
  });
  if (probe.streams === undefined) {
    const { reply } = await subscribe(probe, { lastPosts: 0 });
    const resolved = dataOf(reply)['streamIds'];
    if (Array.isArray(resolved)) probe.streams = resolved.filter((id): id is string => typeof id === 'string');
  }
  if (probe.streams === undefined) {
    const list = await rest(probe.target, probe.log, 'GET', '/v1/streams', { query: { limit: '50' } });
    const streams = (list.json as { streams?: Record<string, unknown>[] } | undefined)?.streams ?? [];
    probe.streams = streams.filter((stream) => stream['following'] === true).map((stream) => String(stream['id']));
  }
  if (probe.streams.length === 0) throw new Skip('the key follows no stream');
  return probe.streams;
}

/** How many posts a stream shows through REST, newest first, up to `most` (following `nextToken`). */
export async function postsOnRecord(probe: Probe, streamId: string, most: number): Promise<number | undefined> {
  let count = 0;
  let token: string | undefined;
  for (let page = 0; page < 20 && count < most; page += 1) {
    const answer = await rest(probe.target, probe.log, 'GET', `/v1/streams/${encodeURIComponent(streamId)}/posts`, {
      query: { limit: String(most - count), ...(token === undefined ? {} : { nextToken: token }) },
    });
    const body = answer.json as { posts?: { hidden?: unknown }[]; nextToken?: unknown; cursor?: unknown } | undefined;
    if (answer.status !== 200 || !Array.isArray(body?.posts)) return undefined;
    count += body.posts.filter((post) => post.hidden !== true).length;
    const next = body.nextToken ?? body.cursor;
    if (typeof next !== 'string' || next === '') break;
    token = next;
  }
  return Math.min(count, most);
}

/** Reads a tree feed address as the Tree family does: sends `login KEY`, takes every frame as an item. */
export async function treeFeed(probe: Probe, path: string, query: Record<string, string>): Promise<Observation> {
  return connected(probe, { path, query: { apiKey: probe.target.apiKey, lastPosts: '5', ...query } }, async (wire) => {
    wire.send(`login ${probe.target.apiKey}`);
    const first = await wire.next();
    await wire.until(() => false, QUIET_MS);
    const items = wire.received.filter(isTreeItem);
    const envelopes = wire.received.filter((frame) => eventOf(frame) !== undefined).length;
    const item = items[0]?.json as Record<string, unknown> | undefined;
    const withCashtag = items
      .map((frame) => frame.json as Record<string, unknown>)
      .find((each) => /\$[A-Za-z][A-Za-z0-9]{1,9}\b/.test(String(each['body'] ?? each['en'] ?? each['title'] ?? '')));
    return {
      first: first === undefined ? 'none' : isTreeItem(first) ? 'tree item' : (eventOf(first) ?? 'text'),
      envelopes: envelopes === 0 ? 'none' : 'some',
      stillOpen: wire.isOpen,
      numericTime: item === undefined ? undefined : typeof item['time'] === 'number',
      hasId: item === undefined ? undefined : typeof item['_id'] === 'string',
      hasText:
        item === undefined ? undefined : ['en', 'body', 'title'].some((field) => typeof item[field] === 'string'),
      coinWhenCashtag: withCashtag === undefined ? undefined : typeof withCashtag['coin'] === 'string',
    };
  });
}

/** The graphql-transport-ws handshake and one `streamPostCreated` subscription. */
export async function graphqlSubscription(probe: Probe): Promise<Observation> {
  return connected(probe, { path: '/graphql', protocol: 'graphql-transport-ws' }, async (wire) => {
    if (wire.refused) return { upgraded: false };
    wire.sendJson({ type: 'connection_init', payload: { apiKey: probe.target.apiKey } });
    const ack = await wire.next((frame) => (frame.json as { type?: unknown })?.type === 'connection_ack');
    wire.sendJson({
      id: '1',
      type: 'subscribe',
      payload: { query: 'subscription { streamPostCreated { text createdAt streamId } }' },
    });
    const refused = await wire.next(
      (frame) => ['error', 'complete'].includes(String((frame.json as { type?: unknown })?.type)),
      0,
      QUIET_MS,
    );
    return {
      upgraded: true,
      subprotocol: wire.isOpen || ack !== undefined ? 'graphql-transport-ws' : 'none',
      acknowledged: ack !== undefined,
      subscribed: ack !== undefined && refused === undefined && wire.isOpen,
    };
  });
}

export function writeStream(probe: Probe): string {
  if (probe.writeStream === undefined) throw new Skip('needs --allow-writes --stream ID');
  return probe.writeStream;
}

/** Publishes one marked test post and returns the ack's frame (counted as a write). */
export async function publishTest(probe: Probe, data: Record<string, unknown>, times = 1): Promise<Frame[]> {
  const streamId = writeStream(probe);
  return bare(probe, async (wire) => {
    const replies: Frame[] = [];
    for (let i = 0; i < times; i += 1) {
      const from = wire.received.length;
      wire.sendJson({
        event: 'add-stream-post',
        data: { streamId, content: TEST_TEXT, contentType: 'rawtext', ...data },
      });
      const reply = await wire.next(isReply, from);
      if (reply === undefined) break;
      if (eventOf(reply) === 'ack' && dataOf(reply)['duplicate'] !== true) probe.log.postsWritten += 1;
      replies.push(reply);
    }
    return replies;
  });
}

export const postOf = (frame: Frame | undefined) => {
  const post = dataOf(frame)['post'];
  return post !== null && typeof post === 'object' ? (post as Record<string, unknown>) : {};
};
