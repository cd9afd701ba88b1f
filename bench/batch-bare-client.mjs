#!/usr/bin/env node
/**
 * The baseline of bench/batch: the least a client must do to publish NDJSON
 * posts from stdin over one `ws` connection, with none of stream-posts'
 * work (no config, no validation, no reconnects, no retries).
 *
 *   node bench/batch-bare-client.mjs --url=ws://127.0.0.1:PORT --stream=ID [--window=64] < posts.ndjson
 *
 * The key comes from STREAM_POSTS_API_KEY and goes in the `x-api-key` header.
 * Each input line is a JSON object of `add-stream-post` arguments minus
 * `streamId`; it is sent as `{"event":"add-stream-post","data":{streamId,…},"requestId":"<line>"}`
 * once the server has sent `connected`, pipelined with at most `window`
 * commands unanswered (an `ack` or `error` answers one). Writes one line per
 * post to stdout, `{"line":N,"post":{…},"duplicate":false}` or `{"line":N,"error":{"code","message"}}`
 * (N counts input lines from 1), and exits once every post is answered:
 * 0 all published, 1 some refused, 3 cannot connect or authenticate.
 */
import { WebSocket } from 'ws';

const flags = Object.fromEntries(
  process.argv.slice(2).map((arg) => {
    const match = /^--([\w-]+)(?:=(.*))?$/.exec(arg);
    if (!match) fail(2, `unexpected argument ${arg}`);
    return [match[1], match[2] ?? 'true'];
  }),
);
const baseUrl = (flags.url ?? process.env.STREAM_POSTS_URL ?? 'ws://127.0.0.1:8787').replace(/\/+$/, '');
const wsUrl = baseUrl.endsWith('/v1/ws') ? baseUrl : `${baseUrl}/v1/ws`;
const streamId = flags.stream;
const window = Number(flags.window ?? 64);
const apiKey = process.env.STREAM_POSTS_API_KEY;
if (!streamId) fail(2, '--stream=ID is required');
if (!Number.isInteger(window) || window < 1) fail(2, `--window must be a whole number >= 1, got ${flags.window}`);
if (!apiKey) fail(2, 'STREAM_POSTS_API_KEY is not set');

/** Commands ready to send, in input order; `next` is the first not yet sent. */
const ready = [];
let next = 0;
/** requestId → input line of each command sent and not yet answered. */
const inFlight = new Map();
let lineNumber = 0;
let partial = '';
let inputEnded = false;
let connected = false;
let done = false;
let refused = 0;

/** Result lines are gathered and written once per turn of the event loop, not once per post. */
let output = [];
let flushScheduled = false;
function emit(result) {
  output.push(JSON.stringify(result));
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flush);
  }
}
function flush() {
  flushScheduled = false;
  if (output.length === 0) return;
  process.stdout.write(`${output.join('\n')}\n`);
  output = [];
}

function fail(exitCode, message) {
  process.stderr.write(`batch-bare-client: ${message}\n`);
  process.exit(exitCode);
}

function addLine(text) {
  lineNumber += 1;
  if (text.trim() === '') return;
  let args;
  try {
    args = JSON.parse(text);
  } catch {
    args = undefined;
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    refused += 1;
    emit({ line: lineNumber, error: { code: 'bad-input', message: 'the line is not a JSON object' } });
    return;
  }
  const requestId = String(lineNumber);
  ready.push({
    line: lineNumber,
    requestId,
    frame: JSON.stringify({ event: 'add-stream-post', data: { streamId, ...args }, requestId }),
  });
}

function pump() {
  if (!connected || done) return;
  while (next < ready.length && inFlight.size < window) {
    const command = ready[next];
    ready[next++] = undefined;
    inFlight.set(command.requestId, command.line);
    ws.send(command.frame);
  }
  if (inputEnded && next === ready.length && inFlight.size === 0) {
    done = true;
    flush();
    process.exitCode = refused > 0 ? 1 : 0;
    ws.close(1000);
  }
}

const ws = new WebSocket(wsUrl, { headers: { 'x-api-key': apiKey }, perMessageDeflate: false });
ws.on('error', (error) => fail(3, `cannot connect to ${wsUrl}: ${error.message}`));
ws.on('close', (code) => {
  if (!done)
    fail(
      3,
      `the server closed the connection (${code}) with ${inFlight.size + ready.length - next} post(s) unanswered`,
    );
});
ws.on('message', (data) => {
  const message = JSON.parse(data.toString('utf8'));
  const line = message.requestId === undefined ? undefined : inFlight.get(message.requestId);
  if (line !== undefined) {
    inFlight.delete(message.requestId);
    if (message.event === 'ack') {
      emit({ line, post: message.data.post, duplicate: message.data.duplicate });
    } else {
      refused += 1;
      emit({ line, error: { code: message.data?.code, message: message.data?.message } });
    }
    pump();
  } else if (message.event === 'connected') {
    connected = true;
    pump();
  } else if (message.event === 'error') {
    fail(3, `refused: ${message.data?.code}: ${message.data?.message}`);
  }
  // keep-alive and anything else: nothing to do.
});

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const lines = (partial + chunk).split('\n');
  partial = lines.pop();
  for (const line of lines) addLine(line);
  pump();
});
process.stdin.on('end', () => {
  if (partial !== '') addLine(partial);
  partial = '';
  inputEnded = true;
  pump();
});
