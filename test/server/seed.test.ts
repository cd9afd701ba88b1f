import { describe, expect, it } from 'vitest';
import { DEMO_SEED } from '../../src/server/service/demo-seed.js';
import { parseSeed, parseSeedText, SeedError, type SeedInput } from '../../src/server/service/seed.js';

const READER_KEY = 'reader-key-0001';
const STREAM_KEY = 'stream-key-0001';
const CUSTOM_KEY = 'custom-key-0001';

/** A small valid seed: one owner, one reader, a regular and a custom stream. */
function base(): SeedInput {
  return {
    users: [
      { id: 'owner', name: 'Owner', readerKey: 'owner-key-0001' },
      {
        id: 'reader',
        name: 'Reader',
        readerKey: READER_KEY,
        follows: ['news', 'alerts'],
        customTargets: { alerts: ['BTC'] },
      },
    ],
    streams: [
      { id: 'news', name: 'News', owner: 'owner', key: STREAM_KEY },
      { id: 'alerts', name: 'Alerts', owner: 'owner', key: CUSTOM_KEY, custom: true, customTargets: ['BTC', 'ETH'] },
    ],
    posts: [
      { streamId: 'news', content: 'hello', contentType: 'rawtext' },
      {
        streamId: 'alerts',
        content: '$BTC',
        contentType: 'markdown',
        customTarget: 'BTC',
        createdAt: '2026-01-01T00:00:00Z',
      },
    ],
  };
}

function seedError(run: () => unknown): SeedError {
  try {
    run();
  } catch (error) {
    if (error instanceof SeedError) return error;
    throw error;
  }
  throw new Error('expected a SeedError');
}

describe('parseSeed', () => {
  it('accepts a minimal seed and fills defaults', () => {
    expect(parseSeed({ users: [{ id: 'u', name: 'U', readerKey: 'abcdefgh' }] })).toEqual({
      users: [{ id: 'u', name: 'U', readerKey: 'abcdefgh', follows: [], customTargets: {} }],
      streams: [],
      posts: [],
    });
  });

  it('accepts the base seed unchanged apart from defaults', () => {
    const seed = parseSeed(base());
    expect(seed.users[0]).toEqual({
      id: 'owner',
      name: 'Owner',
      readerKey: 'owner-key-0001',
      follows: [],
      customTargets: {},
    });
    expect(seed.streams[0]).toMatchObject({ id: 'news', custom: false, customTargets: [] });
    expect(seed.streams[1]).toMatchObject({ id: 'alerts', custom: true, customTargets: ['BTC', 'ETH'] });
    expect(seed.posts).toHaveLength(2);
  });

  it('fills a stream’s directory fields: followers counts the seed’s users who follow it', () => {
    const seed = parseSeed(base());
    expect(seed.streams[0]).toEqual({
      id: 'news',
      name: 'News',
      owner: 'owner',
      key: STREAM_KEY,
      custom: false,
      customTargets: [],
      description: '',
      label: '',
      isFeatured: false,
      packageOnly: false,
      category: 'OTHER',
      state: 'ACTIVE',
      pricingType: 'FREE',
      followers: 1,
      public: true,
      customTargetsData: {},
      paidStreamData: {},
    });
    const given = base();
    given.streams![1] = { ...given.streams![1]!, followers: 0, state: 'DRAFT', pricingType: 'PACKAGE_ONLY' };
    expect(parseSeed(given).streams[1]).toMatchObject({ followers: 0, state: 'DRAFT', pricingType: 'PACKAGE_ONLY' });
  });

  type Edit = (seed: SeedInput & { users: any[]; streams: any[]; posts: any[] }) => void;

  it.each<[string, Edit, string]>([
    ['no users', (s) => (s.users = []), 'seed.users'],
    ['users missing', (s) => delete (s as { users?: unknown }).users, 'seed.users'],
    ['unknown top-level field', (s) => Object.assign(s, { extra: 1 }), 'seed'],
    ['user id with a space', (s) => (s.users[0].id = 'a b'), 'seed.users[0].id'],
    ['user without a name', (s) => delete s.users[1].name, 'seed.users[1].name'],
    ['short reader key', (s) => (s.users[0].readerKey = 'short'), 'seed.users[0].readerKey'],
    ['unknown user field', (s) => (s.users[1].admin = true), 'seed.users[1]'],
    ['duplicate user id', (s) => (s.users[1].id = 'owner'), 'seed.users[1].id'],
    ['stream id too long', (s) => (s.streams[0].id = 'x'.repeat(65)), 'seed.streams[0].id'],
    ['stream custom not a boolean', (s) => (s.streams[0].custom = 'yes'), 'seed.streams[0].custom'],
    ['duplicate stream id', (s) => (s.streams[1].id = 'news'), 'seed.streams[1].id'],
    ['unknown stream owner', (s) => (s.streams[1].owner = 'ghost'), 'seed.streams[1].owner'],
    ['custom stream without targets', (s) => (s.streams[1].customTargets = []), 'seed.streams[1].customTargets'],
    ['targets on a regular stream', (s) => (s.streams[0].customTargets = ['X']), 'seed.streams[0].customTargets'],
    ['follows an unknown stream', (s) => (s.users[1].follows = ['ghost']), 'seed.users[1].follows[0]'],
    ['second follow unknown', (s) => (s.users[1].follows = ['news', 'ghost']), 'seed.users[1].follows[1]'],
    [
      'targets on an unknown stream',
      (s) => (s.users[1].customTargets = { ghost: ['BTC'] }),
      'seed.users[1].customTargets.ghost',
    ],
    [
      'targets on a regular stream',
      (s) => (s.users[1].customTargets = { news: ['BTC'] }),
      'seed.users[1].customTargets.news',
    ],
    [
      'target the stream lacks',
      (s) => (s.users[1].customTargets = { alerts: ['SOL'] }),
      'seed.users[1].customTargets.alerts',
    ],
    ['stream state "active"', (s) => (s.streams[0].state = 'active'), 'seed.streams[0].state'],
    ['stream pricingType "ALL"', (s) => (s.streams[0].pricingType = 'ALL'), 'seed.streams[0].pricingType'],
    ['negative followers', (s) => (s.streams[0].followers = -1), 'seed.streams[0].followers'],
    ['fractional followers', (s) => (s.streams[0].followers = 1.5), 'seed.streams[0].followers'],
    ['empty category', (s) => (s.streams[0].category = ''), 'seed.streams[0].category'],
    ['public "yes"', (s) => (s.streams[0].public = 'yes'), 'seed.streams[0].public'],
    ['paidStreamData a list', (s) => (s.streams[0].paidStreamData = []), 'seed.streams[0].paidStreamData'],
    [
      'stream createdAt without zone',
      (s) => (s.streams[0].createdAt = '2026-01-01T00:00'),
      'seed.streams[0].createdAt',
    ],
    ['post to an unknown stream', (s) => (s.posts[0].streamId = 'ghost'), 'seed.posts[0].streamId'],
    ['post with empty content', (s) => (s.posts[0].content = ''), 'seed.posts[0].content'],
    ['post content over 64 KiB', (s) => (s.posts[0].content = 'é'.repeat(32 * 1024) + 'a'), 'seed.posts[0].content'],
    ['post contentType html', (s) => (s.posts[1].contentType = 'html'), 'seed.posts[1].contentType'],
    ['post createdAt without zone', (s) => (s.posts[1].createdAt = '2026-01-01T00:00:00'), 'seed.posts[1].createdAt'],
    ['custom post without target', (s) => delete s.posts[1].customTarget, 'seed.posts[1].customTarget'],
    ['target on a regular post', (s) => (s.posts[0].customTarget = 'BTC'), 'seed.posts[0].customTarget'],
    ['target the stream lacks', (s) => (s.posts[1].customTarget = 'SOL'), 'seed.posts[1].customTarget'],
  ])('%s → %s', (_name, edit, path) => {
    const seed = base() as Parameters<Edit>[0];
    edit(seed);
    const error = seedError(() => parseSeed(seed));
    expect(error.code).toBe('invalid-seed');
    expect(error.path).toBe(path);
    expect(error.message.slice(0, path.length + 2)).toBe(`${path}: `);
  });

  it.each<[string, Edit, string, string]>([
    [
      'two users share a reader key',
      (s) => (s.users[0].readerKey = READER_KEY),
      'seed.users[1].readerKey',
      'seed.users[0].readerKey',
    ],
    [
      'a stream key repeats a reader key',
      (s) => (s.streams[0].key = READER_KEY),
      'seed.streams[0].key',
      'seed.users[1].readerKey',
    ],
    ['two streams share a key', (s) => (s.streams[1].key = STREAM_KEY), 'seed.streams[1].key', 'seed.streams[0].key'],
  ])('%s → %s, naming the first use and never the key', (_name, edit, path, firstUse) => {
    const seed = base() as Parameters<Edit>[0];
    edit(seed);
    const error = seedError(() => parseSeed(seed));
    expect(error.message.slice(0, path.length + 2)).toBe(`${path}: `);
    expect(error.message).toContain(firstUse);
    for (const key of [READER_KEY, STREAM_KEY, CUSTOM_KEY]) expect(error.message).not.toContain(key);
  });

  it('never echoes a rejected key that is too short', () => {
    const seed = base() as Parameters<Edit>[0];
    seed.streams[0].key = 'sk_7x';
    const error = seedError(() => parseSeed(seed));
    expect(error.path).toBe('seed.streams[0].key');
    expect(error.message).not.toContain('sk_7x');
  });
});

describe('parseSeedText', () => {
  it('parses JSON text', () => {
    expect(parseSeedText(JSON.stringify(base()))).toEqual(parseSeed(base()));
  });

  it.each([['{'], [''], ['{"users": [}'], ['not json']])('%j → SeedError at seed', (text) => {
    const error = seedError(() => parseSeedText(text));
    expect(error.path).toBe('seed');
    expect(error.message).toMatch(/^seed: not valid JSON/);
  });

  it('reports schema errors of valid JSON by path', () => {
    expect(seedError(() => parseSeedText('{"users": 5}')).path).toBe('seed.users');
  });
});

describe('DEMO_SEED', () => {
  const customStreams = DEMO_SEED.streams.filter((stream) => stream.custom);
  const regularStreams = DEMO_SEED.streams.filter((stream) => !stream.custom);

  it('is a valid seed', () => {
    expect(parseSeed(DEMO_SEED)).toEqual(DEMO_SEED);
  });

  it('has at least two regular streams and one custom stream', () => {
    expect(regularStreams.length).toBeGreaterThanOrEqual(2);
    expect(customStreams.length).toBeGreaterThanOrEqual(1);
  });

  it('has two users following one custom stream with different targets', () => {
    const pairs = customStreams.flatMap((stream) => {
      const selections = DEMO_SEED.users
        .filter((user) => user.follows.includes(stream.id) && (user.customTargets[stream.id]?.length ?? 0) > 0)
        .map((user) => [...(user.customTargets[stream.id] ?? [])].sort().join(','));
      return new Set(selections).size >= 2 ? [stream.id] : [];
    });
    expect(pairs.length).toBeGreaterThanOrEqual(1);
  });

  it('has posts, including on regular and custom streams', () => {
    expect(DEMO_SEED.posts.length).toBeGreaterThan(0);
    const streamsWithPosts = new Set(DEMO_SEED.posts.map((post) => post.streamId));
    expect(regularStreams.some((stream) => streamsWithPosts.has(stream.id))).toBe(true);
    expect(customStreams.some((stream) => streamsWithPosts.has(stream.id))).toBe(true);
  });
});
