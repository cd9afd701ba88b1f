import { isoTime } from '../../protocol/dates.js';
import type { UserRecord } from '../stores/store.js';

/**
 * The `connected` frame of each user, who follows the same streams until the store is
 * reset (which makes new user records). The prefix (without its closing braces) is built
 * once, already UTF-8: a user following many streams has a prefix of kilobytes, not encoded
 * again per connection. Each connection adds only its own fields (`serverTime`, a stream
 * key's `streamId`), and the last frame is kept: connections of the same user and key kind
 * arriving within the same millisecond (a reconnecting fleet) share it. A frame is never
 * written to once built, so several sockets may send the same one.
 */
export class Greeting {
  at = NaN;
  streamId: string | undefined = undefined;
  extra = '';
  frame: Buffer | undefined = undefined;

  constructor(readonly prefix: Buffer) {}

  /** `extra`: fields of our dialect, already JSON with a leading comma. */
  frameAt(serverTime: number, streamId: string | undefined, extra: string): Buffer {
    if (this.frame !== undefined && this.at === serverTime && this.streamId === streamId && this.extra === extra)
      return this.frame;
    const stream = streamId === undefined ? '' : `,"streamId":${JSON.stringify(streamId)}`;
    const tail = `,"serverTime":"${isoTime(serverTime)}"${stream}${extra}}}`;
    const prefix = this.prefix;
    const frame = Buffer.allocUnsafe(prefix.length + Buffer.byteLength(tail));
    prefix.copy(frame);
    frame.write(tail, prefix.length);
    this.at = serverTime;
    this.streamId = streamId;
    this.extra = extra;
    this.frame = frame;
    return frame;
  }
}

/** The greeting of each user, kept while its record is. */
export const greetings = new WeakMap<UserRecord, Greeting>();
