import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import { advanceClock, connectAs, http, KEYS, startTestServer } from '../support/harness.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

async function put(url: string, type: string, body: Buffer): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: 'PUT', headers: { 'content-type': type }, body });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

async function get(url: string): Promise<{ status: number; type: string | null; bytes: Buffer; headers: Headers }> {
  const response = await fetch(url);
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    bytes: Buffer.from(await response.arrayBuffer()),
    headers: response.headers,
  };
}

function publishWithMedia(server: StreamPostsServer, uploadMedia: unknown, extra: Record<string, unknown> = {}) {
  return http(server, 'POST', '/v1/streams/macro-wire/post', {
    key: KEYS.macroWire,
    body: { content: 'chart attached', contentType: 'rawtext', uploadMedia, ...extra },
  });
}

// On redis-3 every request goes to the next of three instances: an address handed out by one
// takes its upload at another and is served by a third.
describe('uploadMedia and mediaUploadURLs', () => {
  it('hands out one upload address per item and lists where each will be served in the delivered post', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const reply = await publishWithMedia(server, [{ mimeType: 'image/png' }, { mimeType: 'video/mp4' }], {
      metadata: { headline: 'Chart', media: [{ type: 'image/png', url: 'https://example.org/logo.png' }] },
    });
    expect(reply.status).toBe(201);
    const uploads = reply.body.mediaUploadURLs as { type: string; url: string }[];
    expect(uploads.map((upload) => upload.type)).toEqual(['image/png', 'video/mp4']);
    for (const upload of uploads) expect(upload.url.startsWith(`${server.httpUrl}/`)).toBe(true);
    const delivered = (await alice.nextEvent('stream.post.created')).data;
    expect(delivered).toEqual(reply.body.post);
    expect(delivered.metadata.headline).toBe('Chart');
    const media = delivered.metadata.media as { type: string; url: string }[];
    expect(media[0]).toEqual({ type: 'image/png', url: 'https://example.org/logo.png' });
    expect(media.slice(1).map((item) => item.type)).toEqual(['image/png', 'video/mp4']);
    // Where the bytes are served is not where they are uploaded: a reader cannot upload.
    for (const [i, upload] of uploads.entries()) expect(media[i + 1]!.url).not.toBe(upload.url);

    expect((await get(media[1]!.url)).status).toBe(404);
    expect((await put(uploads[0]!.url, 'image/png', PNG)).status).toBe(200);
    const served = await get(media[1]!.url);
    expect(served).toMatchObject({ status: 200, type: 'image/png' });
    expect(served.bytes.equals(PNG)).toBe(true);
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('refuses an upload of the wrong type, too large, a second time, or late, and stores nothing', async () => {
    const server = await startTestServer();
    const reply = await publishWithMedia(server, [{ mimeType: 'image/png' }, { mimeType: 'image/jpeg' }]);
    const [png, jpeg] = reply.body.mediaUploadURLs as { url: string }[];
    const [pngServed, jpegServed] = (reply.body.post.metadata.media as { url: string }[]).map((item) => item.url);

    const wrongType = await put(png!.url, 'image/jpeg', PNG);
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.error.message).toContain('image/png');
    const tooLarge = await put(png!.url, 'image/png', Buffer.alloc(10 * 1024 * 1024 + 1));
    expect(tooLarge.status).toBe(413);
    expect((await get(pngServed!)).status).toBe(404);

    // The refusals used nothing up: the right upload still goes through, once.
    expect((await put(png!.url, 'image/png; charset=binary', PNG)).status).toBe(200);
    const twice = await put(png!.url, 'image/png', Buffer.from('other bytes'));
    expect(twice.status).toBe(409);
    expect((await get(pngServed!)).bytes.equals(PNG)).toBe(true);

    await advanceClock(server, 10 * 60_000 + 1);
    const late = await put(jpeg!.url, 'image/jpeg', Buffer.from('jpeg'));
    expect(late.status).toBe(410);
    expect(late.body.error.message).toContain('10 minutes');
    expect((await get(jpegServed!)).status).toBe(404);
  });

  it('answers an unknown upload address 404, and other methods 405', async () => {
    const server = await startTestServer();
    expect((await put(`${server.httpUrl}/v1/uploads/nothing-here`, 'image/png', PNG)).status).toBe(404);
    expect((await http(server, 'GET', '/v1/uploads/nothing-here')).status).toBe(405);
    expect((await http(server, 'POST', '/v1/media/nothing-here', { body: {} })).status).toBe(405);
    expect((await get(`${server.httpUrl}/v1/media/nothing-here`)).status).toBe(404);
  });

  it('hands out no new addresses for a deduplicated repeat, nor for a refused publish', async () => {
    const server = await startTestServer();
    const body = [{ mimeType: 'image/png' }];
    const first = await publishWithMedia(server, body, { idempotencyKey: 'media-1' });
    expect(first.status).toBe(201);
    const again = await publishWithMedia(server, body, { idempotencyKey: 'media-1' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ post: first.body.post, duplicate: true });
    const refused = await http(server, 'POST', '/v1/streams/macro-wire/post', {
      key: KEYS.cryptoLegal,
      body: { content: 'x', uploadMedia: body },
    });
    expect(refused.status).toBe(403);
    expect(refused.body).not.toHaveProperty('mediaUploadURLs');
    // The first post's address still takes its upload.
    expect((await put(first.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(200);
  });
});

describe('the service-wide cap on upload addresses waiting', () => {
  it('refuses a publish past 1,000 waiting addresses, storing nothing; an upload frees one', async () => {
    const server = await startTestServer();
    const four = Array.from({ length: 4 }, () => ({ mimeType: 'image/png' }));
    const replies = [];
    for (let i = 0; i < 250; i += 25) {
      replies.push(...(await Promise.all(Array.from({ length: 25 }, () => publishWithMedia(server, four)))));
    }
    expect(replies.every((reply) => reply.status === 201)).toBe(true);
    const posts = (await server.state()).posts;

    const refused = await publishWithMedia(server, [{ mimeType: 'image/png' }]);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'limit-exceeded' });
    expect(refused.body.error.message).toContain('1000 uploads');
    expect((await server.state()).posts).toBe(posts);

    expect((await put(replies[0]!.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(200);
    expect((await publishWithMedia(server, [{ mimeType: 'image/png' }])).status).toBe(201);
    expect((await publishWithMedia(server, [{ mimeType: 'image/png' }])).status).toBe(403);
  });
});
