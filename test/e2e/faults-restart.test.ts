import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminState } from '../support/harness.js';
import { ensureBuilt } from '../support/cli.js';
import { inProcess, type InProcessRun } from '../support/in-process.js';
import { jsonLines } from '../support/cli-output.js';
import { freeFixedPort } from '../support/ports.js';
import { PostPump } from '../support/post-pump.js';
import { startLoggedServe, type LogLine, type LoggedServe } from '../support/serve.js';

beforeAll(ensureBuilt);

const LISTENERS = 100;
const WAVE = 25;
/** Waits for things 100 listeners on a shared 2-core machine must all do. */
const SLOW_MS = 90_000;

const STREAMS = Array.from({ length: 6 }, (_, i) => ({ id: `fault-${i}`, key: `sp_fault_stream_${i}` }));

/** Reader `i` follows two neighbouring streams of the six, so each stream has about a third of the listeners. */
function followsOf(i: number): string[] {
  return [STREAMS[i % STREAMS.length]!.id, STREAMS[(i + 1) % STREAMS.length]!.id];
}

const readers = Array.from({ length: LISTENERS }, (_, i) => ({
  id: `reader-${String(i).padStart(3, '0')}`,
  key: `sp_fault_reader_${String(i).padStart(3, '0')}`,
  follows: followsOf(i),
}));

const SEED = {
  users: [
    { id: 'author', name: 'Author', readerKey: 'sp_fault_reader_author', follows: [] },
    ...readers.map((reader) => ({ id: reader.id, name: reader.id, readerKey: reader.key, follows: reader.follows })),
  ],
  streams: STREAMS.map((stream) => ({ id: stream.id, name: `Fault ${stream.id}`, owner: 'author', key: stream.key })),
  // No seed posts: a restarted serve would give them new ids, and a listener would rightly show them again.
  posts: [],
};

let seedDir: string;
let seedFile: string;
beforeAll(async () => {
  seedDir = await mkdtemp(join(tmpdir(), 'stream-posts-faults-'));
  seedFile = join(seedDir, 'seed.json');
  await writeFile(seedFile, JSON.stringify(SEED));
});
afterAll(async () => {
  if (seedDir) await rm(seedDir, { recursive: true, force: true });
});

const subscribedLine = /^stream-posts: subscribed: /m;
const reconnectedLine = /^stream-posts: reconnected: /m;
const reconnectingLine = /^stream-posts: reconnecting in (\d+(?:\.\d+)?)s/m;

/** Index of the first log line that matches, or -1. */
function firstIndex(logs: LogLine[], match: (line: LogLine) => boolean): number {
  return logs.findIndex(match);
}

/** For each reader, the index of its re-subscription (`requestId: subscribe`) in the log, once all have one. */
function resubscriptions(logs: LogLine[]): Map<string, number> {
  const found = new Map<string, number>();
  logs.forEach((line, index) => {
    if (
      line.msg === 'subscribed' &&
      line['requestId'] === 'subscribe' &&
      typeof line['user'] === 'string' &&
      !found.has(line['user'])
    ) {
      found.set(line['user'], index);
    }
  });
  return found;
}

interface LoggedPost {
  index: number;
  id: string;
  streamId: string;
}

function publishedIn(logs: LogLine[]): LoggedPost[] {
  const posts: LoggedPost[] = [];
  logs.forEach((line, index) => {
    if (line.msg === 'published') posts.push({ index, id: String(line['post']), streamId: String(line['stream']) });
  });
  return posts;
}

/** The largest number of times that fall within any window of `windowMs`. */
function mostWithin(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to += 1) {
    while (sorted[to]! - sorted[from]! >= windowMs) from += 1;
    most = Math.max(most, to - from + 1);
  }
  return most;
}

describe('serve restarted under 100 listeners', () => {
  it('all reconnect, spread out by jitter, and each shows every post published after it reconnected exactly once, and no post twice', async () => {
    const began = Date.now();
    const port = await freeFixedPort();
    const serveArgs = ['--seed', seedFile, '--rate-limit', '0'];
    const first: LoggedServe = await startLoggedServe(serveArgs, port);
    const listeners: InProcessRun[] = [];
    let pump: PostPump | undefined;
    try {
      // Started in waves: 100 connections at once would starve a 2-core machine.
      for (let from = 0; from < LISTENERS; from += WAVE) {
        const wave = readers
          .slice(from, from + WAVE)
          .map((reader) => inProcess(['listen', '--url', first.url, '--api-key', reader.key, '--json']));
        listeners.push(...wave);
        await Promise.all(
          wave.map((cli) => cli.waitFor((out) => subscribedLine.test(out.stderr), 'the subscription', SLOW_MS)),
        );
      }
      const allSubscribedAt = Date.now();
      // Each listen holds one connection and one subscription: its history's end marker names
      // the same streams in the same format, so it replaces the history's subscription.
      expect(await adminState(first)).toMatchObject({ connections: LISTENERS, subscriptions: LISTENERS, posts: 0 });

      pump = new PostPump(first.url, STREAMS, 'restart').start();
      await pump.waitForAcked(30, 'posts on the first serve');

      first.cli.child.kill('SIGTERM');
      const stopAt = Date.now();
      // serve must exit promptly, although the listeners and the publisher start reconnecting while it closes.
      const stopped = await first.cli.exit(30_000).catch(() => {
        const logs = first.logs();
        const late = logs
          .slice(logs.findIndex((line) => line.msg === 'shutting down'))
          .filter((line) => line.msg === 'connected');
        throw new Error(
          `serve did not exit within 30 s of SIGTERM; ${late.length} connection(s) accepted after 'shutting down' ` +
            `(${late.map((line) => `${String(line['conn'])}/${String(line['user'])}`).join(' ')}); its last log lines:\n${first.cli.lines.slice(-6).join('\n')}`,
        );
      });
      expect(stopped.code, first.cli.stderr).toBe(0);
      const stoppedAt = Date.now();
      const second = await startLoggedServe(serveArgs, port);
      const startedAt = Date.now();

      // Every listener subscribed again on the new serve (one re-subscription each, by its own user).
      await second.cli.waitFor(
        () => resubscriptions(second.logs()).size === LISTENERS,
        `${LISTENERS} re-subscriptions on the new serve`,
        SLOW_MS,
      );
      const allReconnectedAt = Date.now();
      await Promise.all(
        listeners.map((cli) =>
          cli.waitFor((out) => reconnectedLine.test(out.stderr), 'the reconnected status line', SLOW_MS),
        ),
      );
      // Keep publishing a while after the last reconnection, then end on a marker per stream.
      const ackedAtReconnection = pump.acked;
      await pump.waitForAcked(ackedAtReconnection + 30, 'posts after every listener reconnected');
      await pump.stop();
      const markers = await pump.publishEach('last post of');
      const markerOf = new Map(markers.map((post) => [post.streamId, post.id!]));
      await Promise.all(
        listeners.map((cli, i) =>
          cli.waitFor(
            (out) => readers[i]!.follows.every((streamId) => out.stdout.includes(markerOf.get(streamId)!)),
            'the last post of each stream',
            SLOW_MS,
          ),
        ),
      );

      const logs1 = first.logs();
      const logs2 = second.logs();
      const shutdown = firstIndex(logs1, (line) => line.msg === 'shutting down');
      expect(shutdown).toBeGreaterThan(0);
      const published1 = publishedIn(logs1);
      const published2 = publishedIn(logs2);
      const acked = new Set(pump.posts.flatMap((post) => (post.id === undefined ? [] : [post.id])));
      // Posts the first serve took before it began to close, while every listener was connected: all must arrive.
      const beforeShutdown = published1.filter((post) => post.index < shutdown);
      // Taken while closing (a publisher that reconnected in time): may or may not have reached anyone.
      const whileClosing = published1.filter((post) => post.index > shutdown);
      expect(beforeShutdown.length).toBeGreaterThanOrEqual(30);
      expect(published2.length).toBeGreaterThanOrEqual(30 + STREAMS.length);
      for (const post of [...published1, ...published2])
        expect(acked.has(post.id) || whileClosing.includes(post), post.id).toBe(true);
      // The ring buffer keeps 100 posts a stream: below that, the replay after a reconnect carries every post of the new serve.
      const perStream2 = new Map<string, number>();
      for (const post of published2) perStream2.set(post.streamId, (perStream2.get(post.streamId) ?? 0) + 1);
      const replayCoversAll = [...perStream2.values()].every((count) => count <= 100);

      const resubscribed = resubscriptions(logs2);
      const connectedAt = new Map<string, number>();
      for (const line of logs2) {
        const user = line['user'];
        if (line.msg === 'connected' && typeof user === 'string' && user !== 'author' && !connectedAt.has(user))
          connectedAt.set(user, Date.parse(line.time));
      }
      const postIds1 = new Set(published1.map((post) => post.id));
      const postIds2 = new Set(published2.map((post) => post.id));

      const times = [...connectedAt.values()];
      const spread = Math.max(...times) - Math.min(...times);
      const most100 = mostWithin(times, 100);
      const firstDelays = listeners.map((cli) => Number(reconnectingLine.exec(cli.stderr)?.[1]));
      console.log(
        `restart: 100 listeners subscribed in ${allSubscribedAt - began} ms; serve exited ${stoppedAt - stopAt} ms after SIGTERM, the new one was up ${startedAt - stoppedAt} ms later; ` +
          `all re-subscribed ${allReconnectedAt - startedAt} ms after that; reconnections spread over ${spread} ms, at most ${most100} of ${LISTENERS} within 100 ms; ` +
          `first reconnect delays ${Math.min(...firstDelays)}-${Math.max(...firstDelays)} s; ` +
          `posts: ${beforeShutdown.length} before the stop, ${whileClosing.length} while closing, ${published2.length} on the new serve ` +
          `(${pump.posts.length - acked.size} without an ack); replay covers all: ${replayCoversAll}`,
      );
      listeners.forEach((cli, i) => {
        const reader = readers[i]!;
        const events = jsonLines(cli.stdout);
        const ids = events.map((event) => event.data.id as string);
        expect(new Set(ids).size, `${reader.id} printed a post twice: ${ids.join(' ')}`).toBe(ids.length);
        expect(
          events.every(
            (event) => event.event === 'stream.post.created' && reader.follows.includes(event.data.streamId),
          ),
          reader.id,
        ).toBe(true);
        // Nothing that was not published: no post of the old serve came back, none was invented.
        for (const id of ids)
          expect(postIds1.has(id) || postIds2.has(id), `${reader.id} showed unknown ${id}`).toBe(true);
        const shown = new Set(ids);
        const mine = (post: LoggedPost) => reader.follows.includes(post.streamId);
        const missing1 = beforeShutdown.filter((post) => mine(post) && !shown.has(post.id));
        expect(
          missing1.map((post) => post.id),
          `${reader.id} missed posts of the first serve`,
        ).toEqual([]);
        // The exact set this listener must show: published on the new serve after its subscription was registered there.
        const at = resubscribed.get(reader.id)!;
        expect(at, reader.id).toBeGreaterThan(0);
        const afterIt = published2.filter((post) => mine(post) && post.index > at);
        expect(afterIt.length, reader.id).toBeGreaterThanOrEqual(2);
        expect(
          afterIt.filter((post) => !shown.has(post.id)).map((post) => post.id),
          `${reader.id} missed posts published after it reconnected`,
        ).toEqual([]);
        if (replayCoversAll) {
          const missing2 = published2.filter((post) => mine(post) && !shown.has(post.id));
          expect(
            missing2.map((post) => post.id),
            `${reader.id} missed posts of the outage (the replay carries them)`,
          ).toEqual([]);
        }
        expect(cli.ended, reader.id).toBe(false);
      });

      // All reconnected, and not all at once.
      expect(connectedAt.size).toBe(LISTENERS);
      expect(spread).toBeGreaterThan(100);
      expect(most100).toBeLessThan(LISTENERS);
      // The first delay after a drop is jittered (equal jitter on 250 ms: 125-250 ms): they are not all the same.
      expect(
        firstDelays.every((delay) => delay > 0 && delay <= 0.3),
        firstDelays.join(' '),
      ).toBe(true);
      expect(new Set(firstDelays).size, firstDelays.join(' ')).toBeGreaterThan(1);
    } finally {
      await pump?.close();
      // in-process.ts stops every listen, and cli.ts kills both serves, after the test.
    }
  }, 180_000);
});
