import { randomBytes } from 'node:crypto';
import net from 'node:net';
import type WebSocket from 'ws';
import type { ServerAddress } from './harness.js';
import { dropAfterTest } from './wire.js';

/**
 * The server's own socket for a client connection (same process, found among
 * the process's active handles by its port pair). Its `writableLength` is what
 * the server has queued for that peer and the kernel has not taken: the
 * server-side `bufferedAmount` (ws adds its sender's queue, which stays empty
 * without permessage-deflate, off on this server).
 */
export function serverSideSocket(server: ServerAddress, clientSocket: net.Socket): net.Socket {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  const matches = handles.filter(
    (handle): handle is net.Socket =>
      handle instanceof net.Socket && handle.localPort === server.port && handle.remotePort === clientSocket.localPort,
  );
  if (matches.length !== 1) throw new Error(`expected one server-side socket, found ${matches.length}`);
  return matches[0]!;
}

/** The TCP socket under a `ws` client (not part of ws's typed API). */
export function tcpSocketOf(ws: WebSocket): net.Socket {
  return (ws as unknown as { _socket: net.Socket })._socket;
}

// --- a hand-made WebSocket peer on a raw TCP socket -------------------------

export const OPCODE = { text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** A client frame (masked, as RFC 6455 requires of clients), FIN set. */
export function clientFrame(opcode: number, payload: Buffer): Buffer {
  const length = payload.length;
  const header =
    length < 126
      ? Buffer.from([0x80 | opcode, 0x80 | length])
      : length < 65536
        ? Buffer.from([0x80 | opcode, 0x80 | 126, length >> 8, length & 0xff])
        : (() => {
            const big = Buffer.alloc(10);
            big[0] = 0x80 | opcode;
            big[1] = 0x80 | 127;
            big.writeBigUInt64BE(BigInt(length), 2);
            return big;
          })();
  const mask = randomBytes(4);
  const masked = Buffer.alloc(length);
  for (let i = 0; i < length; i += 1) masked[i] = payload[i]! ^ mask[i % 4]!;
  return Buffer.concat([header, mask, masked]);
}

/** The HTTP upgrade request of a WebSocket handshake. */
export function upgradeRequest(server: ServerAddress, key: string, path = '/v1/ws'): string {
  return [
    `GET ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${server.port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
    'Sec-WebSocket-Version: 13',
    `x-api-key: ${key}`,
    '',
    '',
  ].join('\r\n');
}

/** A raw TCP connection to the server; nothing is read from it until `readAll`. */
export async function rawConnect(server: ServerAddress): Promise<net.Socket> {
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => {});
  dropAfterTest(() => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return socket;
}

/** Reads a raw socket to its end (or until `timeoutMs`), returning every byte. */
export function readAll(socket: net.Socket, timeoutMs: number): Promise<{ bytes: Buffer; ended: boolean }> {
  const chunks: Buffer[] = [];
  return new Promise((resolve) => {
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      resolve({ bytes: Buffer.concat(chunks), ended });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('close', () => finish(true));
    socket.resume();
  });
}

export interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

/**
 * Splits what a raw peer received into the HTTP response head and the
 * server's frames (unmasked). A frame cut off by the end of the bytes is
 * reported as `truncated`, not as a frame.
 */
export function parseServerBytes(bytes: Buffer): { head: string; frames: ServerFrame[]; truncated: boolean } {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return { head: bytes.toString('latin1'), frames: [], truncated: bytes.length > 0 };
  const head = bytes.subarray(0, headEnd).toString('latin1');
  const frames: ServerFrame[] = [];
  let at = headEnd + 4;
  while (at < bytes.length) {
    if (bytes.length - at < 2) return { head, frames, truncated: true };
    const opcode = bytes[at]! & 0x0f;
    if (bytes[at + 1]! & 0x80) throw new Error('the server sent a masked frame');
    let length = bytes[at + 1]! & 0x7f;
    let headerLength = 2;
    if (length === 126) {
      if (bytes.length - at < 4) return { head, frames, truncated: true };
      length = bytes.readUInt16BE(at + 2);
      headerLength = 4;
    } else if (length === 127) {
      if (bytes.length - at < 10) return { head, frames, truncated: true };
      length = Number(bytes.readBigUInt64BE(at + 2));
      headerLength = 10;
    }
    if (bytes.length - at - headerLength < length) return { head, frames, truncated: true };
    frames.push({ opcode, payload: bytes.subarray(at + headerLength, at + headerLength + length) });
    at += headerLength + length;
  }
  return { head, frames, truncated: false };
}
