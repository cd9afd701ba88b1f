import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { AdjustableClock } from '../../src/server/clock.js';
import { silentLogger } from '../../src/server/logger.js';
import { parseStateText, StateFile } from '../../src/server/admin/state-file.js';
import type { StoreEvent } from '../../src/server/stores/store.js';
import { MemoryStore } from '../../src/server/stores/memory/memory-store.js';
import { publishRequest } from '../support/stores.js';

const HOUR = 3_600_000;
let tmp: string;
const closers: (() => Promise<void>)[] = [];
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'stream-posts-snapshot-'));
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

function memoryStore(clock = new AdjustableClock()) {
  const store = new MemoryStore({ seed: DEMO_SEED, clock, idempotencyWindowMs: HOUR });
  closers.push(() => store.close());
  const events: StoreEvent[] = [];
  store.onEvent((event) => events.push(event));
  return { clock, store, events };
}

const request = publishRequest;

describe('a memory store through a state file', () => {
  it('keeps a pending release and a key whose posts fell out of the history (held), and both still work', async () => {
    const before = memoryStore();
    const now = before.clock.now();
    const hidden = (await before.store.publish(request({ text: 'later', releaseAt: now + HOUR }))).post;
    const keyed = (await before.store.publish(request({ text: 'keyed', idempotencyKey: 'job-1' }))).post;
    // A hundred newer posts push both out of the stream's history.
    for (let i = 0; i < 100; i += 1) await before.store.publish(request({ text: `filler ${i}` }));
    const file = join(tmp, 'held.json');
    const saver = new StateFile({
      file,
      seed: DEMO_SEED,
      store: before.store,
      clock: before.clock,
      logger: silentLogger,
    });
    await saver.open();
    await saver.close();

    const text = await readFile(file, 'utf8');
    const document = JSON.parse(text);
    expect(document.held.map((post: { id: string }) => post.id)).toEqual([hidden.id, keyed.id]);
    const { snapshot } = parseStateText(file, text, DEMO_SEED);

    const after = memoryStore();
    after.store.importSnapshot(snapshot);
    expect(await after.store.stats()).toEqual({ posts: 107, scheduledReleases: 1, idempotencyKeys: 1 });
    expect(await after.store.publish(request({ text: 'keyed', idempotencyKey: 'job-1' }))).toEqual({
      post: { ...keyed },
      duplicate: true,
    });
    after.clock.advance(HOUR);
    expect(after.events.map((event) => [event.type, event.post.id, event.post.text, event.post.hidden])).toEqual([
      ['released', hidden.id, 'later', false],
    ]);
  });

  it('an imported store has no seed posts of its own: its history is the snapshot', async () => {
    const before = memoryStore();
    const seedHistory = await before.store.recent('crypto-legal', 100);
    const after = memoryStore();
    after.store.importSnapshot(before.store.exportSnapshot());
    expect(await after.store.recent('crypto-legal', 100)).toEqual(seedHistory);
  });
});
