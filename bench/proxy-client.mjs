/**
 * The subscribers of bench/proxy (forked through bench/lib/client-process.mjs):
 * `open` connects `count` subscribers to `url` on one stream, `wait` resolves
 * once each has `expected` posts, with the time the last one arrived.
 */
import { now } from './lib/clock.mjs';
import { answerRequests, closeSockets, inLanes, openSubscriber } from './lib/worker.mjs';

const POST = 'stream.post.created';
let sockets = [];
let counts = [];
let lastAt = 0;
let waiting;

function check() {
  if (waiting && counts.every((count) => count >= waiting.expected)) {
    waiting.resolve({ lastAt });
    waiting = undefined;
  }
}

answerRequests({
  async open({ url, key, count, streamId }) {
    const group = { target: url, closing: false, closed: 0 };
    counts = new Array(count).fill(0);
    sockets = new Array(count);
    const subscribe = JSON.stringify({ event: 'on-stream-post', requestId: 's', data: { streamIds: streamId } });
    await inLanes(count, 25, async (index) => {
      sockets[index] = await openSubscriber(
        group,
        { url: `${url}/v1/ws`, headers: { 'x-api-key': key }, subscribe },
        (data) => {
          if (!data.includes(POST)) return;
          counts[index] += 1;
          lastAt = now();
          check();
        },
      );
    });
    return {};
  },
  wait({ expected }) {
    return new Promise((resolve) => {
      waiting = { expected, resolve };
      check();
    });
  },
  async close() {
    await closeSockets(sockets);
    sockets = [];
    return {};
  },
});
