// A recorded connection as the replay plays it: the server's frames grouped by the client frame
// they followed, each at its offset from it, encoded once at start-up.
import type { Json, RecordedBody, RecordedConnection, RecordedEvent } from '../../protocol/recording.js';
import { PLACEHOLDER } from './match.js';
import { rewriteJson, type Rewrite } from './rewrite.js';

/** Fields a server frame echoes from the command it answers: the live command's values go in their place. */
export type Correlation = 'requestId' | 'id';

/** Something the server did, `t` ms after the client frame it followed (or the open). */
export type Outgoing =
  | {
      kind: 'frame';
      t: number;
      binary: boolean;
      /** Encoded once: what is sent unless it echoes a correlation or holds a placeholder. */
      payload: Buffer;
      /** Parsed, when it must be changed per connection (an echoed requestId, a placeholder). */
      personal?: { json: Json } | { text: string };
    }
  | { kind: 'ping'; t: number }
  | { kind: 'close'; t: number; code: number; reason: string };

/** A client frame of the recording and what the server did after it, until the next one. */
export interface Step {
  /** Its place among the connection's events, for reports. */
  event: number;
  frame: RecordedBody;
  replies: Outgoing[];
}

export interface Script {
  connection: RecordedConnection;
  /** What the server sent before the client's first frame, from the open. */
  opening: Outgoing[];
  steps: Step[];
  /** The answer to a heartbeat (a text `ping`, graphql-ws's `{"type":"ping"}`), by the heartbeat as text. */
  heartbeats: Map<string, Outgoing>;
  /** Which echoed fields tie a reply to its command on this transport. */
  correlations: readonly Correlation[];
}

/** The transports whose frames carry the client's own request numbering. */
export function correlationsOf(transport: RecordedConnection['transport']): readonly Correlation[] {
  return transport === 'graphql' ? ['requestId', 'id'] : ['requestId'];
}

/** A text or binary event's body, as matching compares it. */
export function bodyOf(event: RecordedEvent): RecordedBody | undefined {
  if (event.op === 'binary') return { base64: event.base64 };
  if (event.op !== 'text') return undefined;
  return 'json' in event ? { json: event.json } : { text: event.text };
}

/** The heartbeats a client sends and their answers: not steps, as their timing is the client's own. */
export function heartbeatOf(body: RecordedBody): string | undefined {
  if ('text' in body) return body.text === 'ping' ? 'ping' : undefined;
  if ('json' in body) {
    const json = body.json as { type?: unknown } | null;
    if (json !== null && typeof json === 'object' && json.type === 'ping' && Object.keys(json).length <= 2)
      return '{"type":"ping"}';
  }
  return undefined;
}

function isPong(body: RecordedBody): boolean {
  if ('text' in body) return body.text === 'pong';
  const json = 'json' in body ? (body.json as { type?: unknown } | null) : null;
  return json !== null && typeof json === 'object' && json.type === 'pong';
}

function frameOf(body: RecordedBody, t: number, rewrite: Rewrite, correlations: readonly Correlation[]): Outgoing {
  if ('base64' in body) return { kind: 'frame', t, binary: true, payload: Buffer.from(body.base64, 'base64') };
  if ('text' in body) {
    const text = body.text;
    return {
      kind: 'frame',
      t,
      binary: false,
      payload: Buffer.from(text),
      ...(text.search(PLACEHOLDER) >= 0 ? { personal: { text } } : {}),
    };
  }
  const json = rewriteJson(body.json, rewrite);
  const encoded = JSON.stringify(json);
  const echoes =
    json !== null &&
    typeof json === 'object' &&
    !Array.isArray(json) &&
    correlations.some((field) => typeof json[field] === 'string');
  return {
    kind: 'frame',
    t,
    binary: false,
    payload: Buffer.from(encoded),
    ...(echoes || encoded.search(PLACEHOLDER) >= 0 ? { personal: { json } } : {}),
  };
}

/** A recorded connection as steps; its server events after the client's close (the close's echo) are left out. */
export function scriptOf(connection: RecordedConnection, rewrite: Rewrite): Script {
  const correlations = correlationsOf(connection.transport);
  const script: Script = { connection, opening: [], steps: [], heartbeats: new Map(), correlations };
  let replies = script.opening;
  let anchor = 0;
  let heartbeat: string | undefined;
  for (const [index, event] of connection.events.entries()) {
    if (event.from === 'client') {
      if (event.op === 'close') break;
      const body = bodyOf(event);
      if (body === undefined) continue;
      heartbeat = heartbeatOf(body);
      if (heartbeat !== undefined) continue;
      replies = [];
      anchor = event.t;
      script.steps.push({ event: index, frame: body, replies });
      continue;
    }
    const t = event.t - anchor;
    if (event.op === 'ping') replies.push({ kind: 'ping', t });
    else if (event.op === 'close') replies.push({ kind: 'close', t, code: event.code, reason: event.reason });
    else if (event.op !== 'pong') {
      const body = bodyOf(event)!;
      const frame = frameOf(body, t, rewrite, correlations);
      if (heartbeat !== undefined && isPong(body)) {
        if (!script.heartbeats.has(heartbeat)) script.heartbeats.set(heartbeat, frame);
      } else replies.push(frame);
      heartbeat = undefined;
    }
  }
  return script;
}
