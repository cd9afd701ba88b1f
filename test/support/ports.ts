import { createServer } from 'node:net';

/** A port that was free a moment ago (nothing listens there until someone takes it). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** An address where nothing listens: connecting is refused. */
export async function deadUrl(): Promise<string> {
  return `ws://127.0.0.1:${await freePort()}`;
}
