// One live WebSocket connection answered from a recorded one: each client frame matched to
// the recording's, the server frames that followed it sent at their offsets, in order, as fast
// as the peer reads them.
import type { Duplex } from 'node:stream';
import type { ConnectionInfo } from '../../protocol/admin.js';
import { CLOSE_NO_RECORDED_REPLY } from '../../protocol/close-codes.js';
import type { Json, RecordedBody } from '../../protocol/recording.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { closeReason, Connection, type ConnectionContext, type ConnectionSocket } from '../ws/connection.js';
import type { HookedConnection } from '../ws/outlet.js';
import {
  asRecorded,
  bindPlaceholders,
  bodyDifferences,
  closest,
  isObject,
  bodyShown,
  type IgnoredFields,
} from './match.js';
import { fillPlaceholders } from './rewrite.js';
import { heartbeatOf, type Outgoing, type Script, type Step } from './script.js';
import type { Waits } from './waits.js';

/** Close codes a server may send in a close frame; another recorded code closes without one. */
const SENDABLE_CODE = (code: number) =>
  (code >= 1000 && code <= 1014 && ![1004, 1005, 1006].includes(code)) || (code >= 3000 && code <= 4999);
/** Written in slices of at least this many bytes, each once the last has drained (as a history is). */
const MIN_SLICE_BYTES = 64 * 1024;

/** What every replayed connection of a server shares. */
export interface ReplayContext extends ConnectionContext {
  clock: Clock;
  waits: Waits;
  logger: Logger;
  /** Offsets are divided by it; Infinity: no waits at all (`max`). */
  speed: number;
  ignored: IgnoredFields;
  /** A live frame matched nothing: the connection goes to the simulated service instead (false: closed 4400). */
  unmatched(connection: ReplayConnection, frame: Buffer, isBinary: boolean): boolean;
  closed(connection: ReplayConnection): void;
}

/** A batch of recorded frames under way: sent in order, each `t` after `anchor` (scaled by the speed). */
interface Batch {
  anchor: number;
  frames: readonly Outgoing[];
  next: number;
}

export class ReplayConnection extends Connection<ReplayContext> implements HookedConnection {
  readonly identity = undefined;
  /** Steps of the script this connection has been through. */
  readonly used = new Set<Step>();
  /** What the live client put in place of each placeholder (the key it presented). */
  readonly #bound: Map<string, string>;
  /** The key of the handshake: never shown, even where no placeholder stood for it. */
  readonly #presentedKey: string | undefined;
  /** A recorded requestId (or graphql-ws id) → the live command's, or null when it sent none. */
  readonly #echoes = new Map<string, string | null>();
  readonly #batches: Batch[] = [];
  /** The client's frames that opened its session (graphql-ws's `connection_init`), for a hand-over. */
  readonly #opening: Buffer[] = [];
  /** The server's fields left out of matching, and this transport's numbering of commands. */
  readonly #ignored: IgnoredFields;
  #cancelWait: (() => void) | undefined;
  #awaitingDrain = false;
  #closed = false;
  /** Handed to the simulated service: nothing more is read or written here. */
  #handedOver = false;

  constructor(
    ws: ConnectionSocket,
    socket: Duplex,
    context: ReplayContext,
    readonly id: string,
    readonly script: Script,
    bound: Map<string, string>,
    presentedKey: string | undefined,
  ) {
    super(ws, socket, context);
    this.#bound = bound;
    this.#presentedKey = presentedKey;
    this.#ignored = context.ignored.withPaths(script.correlations);
    this.#play(script.opening);
  }

  /** Recorded steps this connection never reached. */
  get unusedSteps(): number {
    return this.script.steps.length - this.used.size;
  }

  /** A live text shown in a log line or a close reason: a key the client presented shows as its placeholder. */
  hide(text: string): string {
    let hidden = text;
    for (const [placeholder, live] of this.#bound) if (live.length >= 4) hidden = hidden.replaceAll(live, placeholder);
    return this.#presentedKey ? hidden.replaceAll(this.#presentedKey, '[key]') : hidden;
  }

  info(): ConnectionInfo {
    return {
      id: this.id,
      user: null,
      stream: null,
      kind: 'user',
      subscriptions: [],
      bufferedBytes: this.bufferedBytes,
      connectedAt: new Date(this.connectedAt).toISOString(),
      remoteAddress: (this.socket as { remoteAddress?: string }).remoteAddress ?? null,
    };
  }

  protected onMessage(data: Buffer, isBinary: boolean): void {
    if (this.#handedOver) return;
    this.frameRead();
    const live: RecordedBody = isBinary ? { base64: data.toString('base64') } : asRecorded(data.toString('utf8'));
    const heartbeat = heartbeatOf(live);
    if (heartbeat !== undefined) {
      const answer = this.script.heartbeats.get(heartbeat);
      // Answered at once, as the upstream did, not behind recorded frames still waiting for their time.
      if (answer && this.answersPings && !this.#closed) this.#send(answer);
      return;
    }
    const ignored = this.#ignored;
    const step = this.script.steps.find(
      (candidate) => !this.used.has(candidate) && bodyDifferences(candidate.frame, live, ignored).length === 0,
    );
    if (step === undefined) {
      this.#miss(live, data, isBinary);
      return;
    }
    this.used.add(step);
    if ('json' in step.frame && 'json' in live) {
      bindPlaceholders(step.frame.json, live.json, this.#bound);
      this.#noteEchoes(step.frame.json, live.json);
      if (isObject(live.json) && live.json['type'] === 'connection_init') this.#opening.push(data);
    } else if ('text' in step.frame && 'text' in live) bindPlaceholders(step.frame.text, live.text, this.#bound);
    this.#play(step.replies);
  }

  /** The live command's numbering, to put in the replies that echo the recorded one. */
  #noteEchoes(recorded: Json, live: Json): void {
    if (!isObject(recorded)) return;
    for (const field of this.script.correlations) {
      const was = recorded[field];
      if (typeof was !== 'string') continue;
      const now = isObject(live) ? live[field] : undefined;
      this.#echoes.set(was, typeof now === 'string' ? now : null);
    }
  }

  #miss(live: RecordedBody, data: Buffer, isBinary: boolean): void {
    const { logger } = this.context;
    const ignored = this.#ignored;
    const near = closest(this.script.steps, (step) => bodyDifferences(step.frame, live, ignored));
    const liveText = bodyShown(live, (text) => this.hide(text));
    logger.log('warn', 'replay: no recorded reply', {
      conn: this.id,
      recorded: this.script.connection.id,
      frame: liveText,
      closest: near ? bodyShown(near.best.frame) : '(the recorded connection has no client frames)',
      closestEvent: near?.best.event,
      differs: near ? near.differ.join(', ') || '(used already)' : undefined,
    });
    if (this.context.unmatched(this, data, isBinary)) return;
    this.close(CLOSE_NO_RECORDED_REPLY, closeReason(`no recorded reply for ${liveText}`));
  }

  /** Queues recorded frames after what is under way, timed from now. */
  #play(frames: readonly Outgoing[]): void {
    if (frames.length === 0 || this.#closed) return;
    this.#batches.push({ anchor: this.context.clock.now(), frames, next: 0 });
    if (this.#batches.length === 1) this.#pump();
  }

  /** Sends every frame that is due, in order, while the peer keeps up; then waits for the next due or the drain. */
  #pump(): void {
    this.#cancelWait?.();
    this.#cancelWait = undefined;
    const { clock, speed, maxBufferedBytes } = this.context;
    const slice = Math.max(maxBufferedBytes / 2, MIN_SLICE_BYTES);
    const now = clock.now();
    while (this.#batches.length > 0 && !this.#closed) {
      const batch = this.#batches[0]!;
      const frame = batch.frames[batch.next];
      if (frame === undefined) {
        this.#batches.shift();
        continue;
      }
      const due = speed === Infinity ? batch.anchor : batch.anchor + frame.t / speed;
      if (due > now) {
        this.#cancelWait = this.context.waits.at(due, () => this.#pump());
        return;
      }
      if (this.ws.bufferedAmount >= slice) {
        this.#awaitDrain();
        return;
      }
      batch.next += 1;
      this.#send(frame);
    }
  }

  #awaitDrain(): void {
    if (this.#awaitingDrain) return;
    this.#awaitingDrain = true;
    this.socket.once('drain', () => {
      this.#awaitingDrain = false;
      this.#pump();
    });
  }

  #send(frame: Outgoing): void {
    if (frame.kind === 'ping') {
      this.outlet.writePing();
      return;
    }
    if (frame.kind === 'close') {
      this.#closed = true;
      if (SENDABLE_CODE(frame.code)) this.close(frame.code, closeReason(frame.reason));
      else this.close(1000, closeReason(frame.reason));
      return;
    }
    if (frame.binary) {
      this.ws.send(frame.payload, { binary: true });
      return;
    }
    this.outlet.writePost(frame.personal ? this.#personal(frame.personal) : frame.payload);
  }

  /** A frame that echoes the live command's numbering, or holds a placeholder the live client filled. */
  #personal(recorded: { json: Json } | { text: string }): Buffer {
    if ('text' in recorded) return Buffer.from(fillPlaceholders(recorded.text, this.#bound));
    let json = recorded.json;
    if (isObject(json)) {
      for (const field of this.script.correlations) {
        const was = json[field];
        if (typeof was !== 'string' || !this.#echoes.has(was)) continue;
        const { [field]: _, ...rest } = json;
        const now = this.#echoes.get(was);
        json = now === null || now === undefined ? rest : { ...rest, [field]: now };
      }
    }
    return Buffer.from(fillPlaceholders(JSON.stringify(json), this.#bound));
  }

  /**
   * Stops reading and writing here and gives the socket to `take` (the simulated service),
   * with the client's frames that opened its session (graphql-ws's `connection_init`), which
   * the simulated service must see before the frame that matched nothing.
   */
  handOver(take: (ws: ConnectionSocket, socket: Duplex, opening: readonly Buffer[]) => void): void {
    this.#handedOver = true;
    this.#stop();
    this.ws.removeAllListeners('message');
    this.ws.removeAllListeners('close');
    this.ws.removeAllListeners('error');
    this.context.closed(this);
    take(this.ws, this.socket, this.#opening);
  }

  #stop(): void {
    this.#closed = true;
    this.#batches.length = 0;
    this.#cancelWait?.();
    this.#cancelWait = undefined;
    this.outlet.dropHeld();
  }

  protected onClose(): void {
    this.#stop();
    this.clearQueue();
    this.context.closed(this);
  }

  protected onError(error: Error): void {
    this.context.logger.log('warn', 'connection error', { conn: this.id, reason: error.message });
  }

  protected slowConsumer(): void {
    this.#stop();
    this.closeSlowly();
  }
}
