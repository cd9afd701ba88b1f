/**
 * The child side of a benchmark's client processes (bench/*-client.mjs, forked
 * through bench/lib/client-process.mjs): answering the parent over IPC, and
 * opening and closing many WebSocket clients.
 */
import { WebSocket } from 'ws';

const CLOSE_DEADLINE_MS = 3_000;

/**
 * Answers the parent's requests: `requests[type](message)` returns the
 * answer's fields, or a promise of them, sent as `{ type: '<type>:ok', target,
 * ...fields }` (target: the request's); when it throws or rejects, `{ type:
 * 'error', request: type, message }` is sent instead. `notices[type](message)`
 * handles a message that gets no answer (the handler sends what it has to say).
 * The process exits when the parent closes the IPC channel.
 */
export function answerRequests(requests, notices = {}) {
  process.on('message', (message) => {
    const notice = notices[message.type];
    if (notice) {
      notice(message);
      return;
    }
    const handler = requests[message.type];
    const work = handler
      ? Promise.resolve().then(() => handler(message))
      : Promise.reject(new Error(`unknown request ${message.type}`));
    work.then(
      (fields) => process.send({ type: `${message.type}:ok`, target: message.target, ...fields }),
      (error) => process.send({ type: 'error', request: message.type, message: error.message }),
    );
  });
  // Without its parent there is no one to report to.
  process.once('disconnect', () => process.exit());
}

/** Calls `work(index)` for each index below `count`, in at most `lanes` lanes that each await one call before the next. */
export async function inLanes(count, lanes, work) {
  let next = 0;
  const lane = async () => {
    while (next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(lanes, count) }, lane));
}

/**
 * Opens one client of `group` (the clients of one target server: `{ target,
 * closing, closed }`) and resolves to it once it is ready: at `connected`,
 * or, given `subscribe` (a command), at the `sub_ack` of that command, sent
 * on `connected`. An `error` event, a socket error or a close before then
 * rejects. Later frames go to `onFrame(data)`; a close the group did not ask
 * for (`closing`) counts in `group.closed` and is told to the parent as
 * `lost {target, code}`.
 */
export function openSubscriber(group, { url, headers, subscribe }, onFrame) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, skipUTF8Validation: true });
    let ready = false;
    ws.on('error', (error) => {
      if (!ready) reject(error);
    });
    ws.on('close', (code) => {
      if (!ready) reject(new Error(`closed with ${code} before it was ready`));
      else if (!group.closing) {
        group.closed += 1;
        process.send({ type: 'lost', target: group.target, code });
      }
    });
    ws.on('message', (data) => {
      if (ready) {
        onFrame(data);
        return;
      }
      const text = data.toString('utf8');
      if (text.includes('"event":"error"')) {
        reject(new Error(`server refused a subscriber: ${text}`));
        ws.terminate();
      } else if (text.includes('"event":"connected"')) {
        if (subscribe) ws.send(subscribe);
        else ready = true;
      } else if (text.includes('"event":"sub_ack"')) {
        ready = true;
      }
      if (ready) resolve(ws);
    });
  });
}

/** Closes every open socket of `sockets` (code 1000), waits for them (3 s at most), then terminates what is left. */
export async function closeSockets(sockets) {
  const closing = [];
  for (const ws of sockets) {
    if (!ws || ws.readyState === WebSocket.CLOSED) continue;
    closing.push(new Promise((resolve) => ws.once('close', resolve)));
    ws.close(1000);
  }
  const deadline = new Promise((resolve) => setTimeout(resolve, CLOSE_DEADLINE_MS));
  await Promise.race([Promise.all(closing), deadline]);
  for (const ws of sockets) ws?.terminate();
}
