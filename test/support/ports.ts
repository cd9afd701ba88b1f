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

/**
 * A port that is free now, below the kernel's ephemeral range (32768+ on
 * Linux), so no outgoing connection of the many clients can take it while
 * `serve` is down between a stop and a restart.
 */
export async function freeFixedPort(): Promise<number> {
  for (let tries = 0; tries < 50; tries += 1) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port found');
}
