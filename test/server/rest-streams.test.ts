import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import { DEMO_REST_STREAMS, directorySeed } from '../support/fixtures.js';
import { http, KEYS, startTestServer } from '../support/harness.js';

const CID = 'sp_test_reader_cid';
const ANN = 'sp_test_reader_ann';
const DESK = 'sp_test_reader_desk';

// What cid (who follows nothing) is shown by default: the public ACTIVE streams, featured
// first (s05, s10, s15, s20), then by followers; s06/s12/s18 are not public, s07/s14/s21 drafts.
/** Stream ids by number: ids(5, 12) is ['s05', 's12']. */
function ids(...numbers: number[]): string[] {
  return numbers.map((n) => `s${String(n).padStart(2, '0')}`);
}

const CID_DEFAULT = ids(20, 15, 10, 5, 23, 22, 19, 17, 16, 13, 11, 9, 8, 4, 3, 2, 1);

async function directory(): Promise<StreamPostsServer> {
  return startTestServer({ seed: directorySeed() });
}

async function list(server: StreamPostsServer, key: string, query = '') {
  return http(server, 'GET', `/v1/streams${query}`, { key });
}

async function listedIds(server: StreamPostsServer, key: string, query: string): Promise<string[]> {
  const reply = await list(server, key, query);
  expect(reply.status).toBe(200);
  expect(reply.body.nextToken).toBeUndefined();
  return reply.body.streams.map((stream: { id: string }) => stream.id);
}

/** Every page of a listing, following nextToken to the end. */
async function allPages(server: StreamPostsServer, key: string, query: string) {
  const pages: string[][] = [];
  let token: string | undefined;
  do {
    const reply = await list(
      server,
      key,
      `?${query}${token === undefined ? '' : `&nextToken=${encodeURIComponent(token)}`}`,
    );
    expect(reply.status).toBe(200);
    pages.push(reply.body.streams.map((stream: { id: string }) => stream.id));
    token = reply.body.nextToken;
    if (token !== undefined) expect(token).toEqual(expect.any(String));
  } while (token !== undefined);
  return pages;
}

describe('GET /v1/streams: the directory', () => {
  it('pages through every stream the key may see, each once, ten by default', async () => {
    const server = await directory();
    const first = await list(server, CID);
    expect(first.body.streams).toHaveLength(10);
    expect(first.body.nextToken).toEqual(expect.any(String));
    const pages = await allPages(server, CID, 'limit=5');
    expect(pages.map((page) => page.length)).toEqual([5, 5, 5, 2]);
    expect(pages.flat()).toEqual(CID_DEFAULT);
    expect(await allPages(server, CID, 'limit=50')).toEqual([CID_DEFAULT]);
  });

  it('shows a non-public stream to its followers and owner only, and marks what the user follows', async () => {
    const server = await directory();
    const annStreams = (await list(server, ANN, '?limit=50')).body.streams as {
      id: string;
      following: boolean;
      selectedTargets?: string[];
    }[];
    expect(annStreams.map((stream) => stream.id).sort()).toEqual([...CID_DEFAULT, 's06', 's12'].sort());
    expect(
      annStreams
        .filter((stream) => stream.following)
        .map((stream) => stream.id)
        .sort(),
    ).toEqual(ids(4, 6, 12));
    // selectedTargets: on a custom stream the user follows (and does not own) only.
    expect(annStreams.find((stream) => stream.id === 's04')!.selectedTargets).toEqual(['A']);
    expect(annStreams.find((stream) => stream.id === 's08')).not.toHaveProperty('selectedTargets');
    const deskStreams = (await list(server, DESK, '?limit=50')).body.streams as { following: boolean }[];
    expect(deskStreams).toHaveLength(20);
    expect(deskStreams.every((stream) => stream.following)).toBe(true);
  });

  it.each([
    ['isFeatured=true', ids(20, 15, 10, 5)],
    ['isFeatured=false&limit=50', CID_DEFAULT.slice(4)],
    ['custom=true', ids(20, 16, 8, 4)],
    ['minFollowers=200', ids(20, 23, 22)],
    ['streamState=DRAFT', ids(21, 14, 7)],
    ['streamCategory=LEGAL', ids(20, 5, 23, 17, 11, 8, 2)],
    ['streamCategory=legal', []],
    ['pricingType=PAID', ids(10, 22, 19, 16, 13, 4, 1)],
    ['pricingType=ALL&limit=50', CID_DEFAULT],
    ['custom=true&minFollowers=100', ids(20, 16)],
    ['sortBy=FOLLOWERS&limit=50', ids(23, 22, 20, 19, 17, 16, 15, 13, 11, 10, 9, 8, 5, 4, 3, 2, 1)],
    ['sortBy=CREATED_AT&limit=50', ids(22, 20, 19, 17, 16, 15, 13, 11, 10, 9, 8, 5, 4, 3, 2, 1, 23)],
    ['isFeatured=&custom=&limit=50', CID_DEFAULT],
  ])('filters and sorts: %s', async (query, expected) => {
    const server = await directory();
    expect(await listedIds(server, CID, `?${query}`)).toEqual(expected);
  });

  it('pages a filtered, sorted list to its end', async () => {
    const server = await directory();
    const pages = await allPages(server, CID, 'sortBy=FOLLOWERS&minFollowers=50&limit=4');
    expect(pages.map((page) => page.length)).toEqual([4, 4, 4, 1]);
    expect(pages.flat()).toEqual(ids(23, 22, 20, 19, 17, 16, 15, 13, 11, 10, 9, 8, 5));
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=51', 'limit'],
    ['limit=ten', 'limit'],
    ['limit=1.5', 'limit'],
    ['isFeatured=yes', 'isFeatured'],
    ['custom=1', 'custom'],
    ['minFollowers=-1', 'minFollowers'],
    ['minFollowers=many', 'minFollowers'],
    ['streamState=active', 'streamState'],
    ['streamState=ARCHIVED', 'streamState'],
    ['sortBy=NAME', 'sortBy'],
    ['pricingType=free', 'pricingType'],
    [`streamCategory=${'X'.repeat(65)}`, 'streamCategory'],
    ['nextToken=not%20a%20token', 'nextToken'],
    [`nextToken=${Buffer.from('[1,2]').toString('base64url')}`, 'nextToken'],
    [`nextToken=${Buffer.from('{"o":2}').toString('base64url')}`, 'nextToken'],
  ])('refuses %s with 400 invalid-argument naming %s', async (query, parameter) => {
    const server = await directory();
    const reply = await list(server, CID, `?${query}`);
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('invalid-argument');
    expect(reply.body.error.message).toContain(parameter);
  });

  it('refuses a token made for other filters or another user', async () => {
    const server = await directory();
    const { nextToken } = (await list(server, CID, '?limit=2')).body;
    expect((await list(server, CID, `?limit=2&nextToken=${nextToken}`)).status).toBe(200);
    const otherSort = await list(server, CID, `?limit=2&sortBy=FOLLOWERS&nextToken=${nextToken}`);
    expect(otherSort.status).toBe(400);
    expect(otherSort.body.error.message).toContain('nextToken');
    expect((await list(server, ANN, `?limit=2&nextToken=${nextToken}`)).status).toBe(400);
  });

  it('answers 401 naming why: no key, or a wrong one', async () => {
    const server = await directory();
    expect((await http(server, 'GET', '/v1/streams')).body.error).toEqual({
      code: 'unauthorized',
      message: 'No secret key provided',
    });
    expect((await list(server, 'sp_wrong_key_1')).body.error).toEqual({
      code: 'unauthorized',
      message: 'Invalid secret key',
    });
    // The query parameter works as the header does.
    expect((await http(server, 'GET', `/v1/streams?apiKey=${CID}&limit=1`)).status).toBe(200);
  });
});

describe('GET /v1/streams/{id}', () => {
  it('gives one stream in its REST form', async () => {
    const server = await startTestServer();
    const reply = await http(server, 'GET', '/v1/streams/whale-alerts', { key: KEYS.bob });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ ...DEMO_REST_STREAMS.whale, selectedTargets: ['SOL'] });
    const own = await http(server, 'GET', '/v1/streams/whale-alerts', { key: KEYS.whaleAlerts });
    expect(own.body).toMatchObject({ following: true, publish: true });
    expect(own.body).not.toHaveProperty('selectedTargets');
  });

  it('answers 404 for an unknown stream, and for a non-public one the key does not follow', async () => {
    const server = await directory();
    for (const [key, id] of [
      [CID, 'nope'],
      [CID, 's06'],
    ] as const) {
      const reply = await http(server, 'GET', `/v1/streams/${id}`, { key });
      expect(reply.status).toBe(404);
      expect(reply.body.error.code).toBe('not-found');
    }
    expect((await http(server, 'GET', '/v1/streams/s06', { key: ANN })).body).toMatchObject({
      id: 's06',
      following: true,
    });
    expect((await http(server, 'GET', '/v1/streams/s07', { key: CID })).body).toMatchObject({
      id: 's07',
      following: false,
    });
    expect((await http(server, 'GET', '/v1/streams/s01')).status).toBe(401);
  });

  it('answers other methods with 405', async () => {
    const server = await directory();
    const reply = await http(server, 'DELETE', '/v1/streams/s01', { key: DESK });
    expect(reply.status).toBe(405);
    expect(reply.headers.get('allow')).toBe('GET');
  });
});
