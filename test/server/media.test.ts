import { describe, expect, it } from 'vitest';
import type { StreamPostsServer } from '../../src/index.js';
import { advanceClock, connectAs, http, KEYS, startTestServer } from '../support/harness.js';
import { directorySeed } from '../support/fixtures.js';
import { getMedia as get, PNG, publishWithMedia, put } from '../support/media.js';

const MIB = 1024 * 1024;
const MINUTE = 60_000;
const CRYPTO_LEGAL = { id: 'crypto-legal', key: KEYS.cryptoLegal };

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

  it('takes any number of uploads until the address lapses, each replacing the bytes; refusals change nothing', async () => {
    const server = await startTestServer();
    const reply = await publishWithMedia(server, [{ mimeType: 'image/png' }, { mimeType: 'image/jpeg' }]);
    const [png, jpeg] = reply.body.mediaUploadURLs as { url: string }[];
    const [pngServed, jpegServed] = (reply.body.post.metadata.media as { url: string }[]).map((item) => item.url);

    const wrongType = await put(png!.url, 'image/jpeg', PNG);
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.error.message).toContain('image/png');
    const tooLarge = await put(png!.url, 'image/png', Buffer.alloc(10 * MIB + 1));
    expect(tooLarge.status).toBe(413);
    expect((await get(pngServed!)).status).toBe(404);

    // As a publisher that caches one address per type sends file after file: the last one is served.
    expect((await put(png!.url, 'image/png; charset=binary', PNG)).status).toBe(200);
    expect((await get(pngServed!)).bytes.equals(PNG)).toBe(true);
    expect((await put(png!.url, 'image/png', Buffer.from('second file'))).status).toBe(200);
    expect((await put(png!.url, 'image/png', Buffer.from('third file'))).status).toBe(200);
    expect((await get(pngServed!)).bytes.toString()).toBe('third file');

    // Half the default hour on the service clock: still open.
    await advanceClock(server, 30 * MINUTE);
    expect((await put(png!.url, 'image/png', Buffer.from('fourth file'))).status).toBe(200);
    await advanceClock(server, 30 * MINUTE + 1);
    const late = await put(jpeg!.url, 'image/jpeg', Buffer.from('jpeg'));
    expect(late.status).toBe(410);
    expect(late.body.error.code).toBe('forbidden');
    expect(late.body.error.message).toContain('1 hour');
    expect((await put(png!.url, 'image/png', PNG)).status).toBe(410);
    expect((await get(jpegServed!)).status).toBe(404);
    // What an address received stays served after it lapses.
    expect((await get(pngServed!)).bytes.toString()).toBe('fourth file');
  });

  it('lapses an address after the configured upload window', async () => {
    const server = await startTestServer({ uploadWindowMs: 5 * MINUTE });
    const reply = await publishWithMedia(server, [{ mimeType: 'image/png' }]);
    const [upload] = reply.body.mediaUploadURLs as { url: string }[];
    await advanceClock(server, 4 * MINUTE);
    expect((await put(upload!.url, 'image/png', PNG)).status).toBe(200);
    await advanceClock(server, MINUTE + 1);
    const late = await put(upload!.url, 'image/png', PNG);
    expect(late.status).toBe(410);
    expect(late.body.error.message).toContain('5 minutes');
  });

  it('gives no address to an item of a type it does not take, and still publishes (201)', async () => {
    const server = await startTestServer();
    const alice = await connectAs(server, KEYS.alice);
    await alice.request('on-stream-post', { streamIds: 'macro-wire' });
    const only = await publishWithMedia(server, [{ mimeType: 'text/html' }], { metadata: { headline: 'H' } });
    expect(only.status).toBe(201);
    expect(only.body.mediaUploadURLs).toEqual([]);
    expect(only.body.post.metadata).toEqual({ headline: 'H' });
    expect((await alice.nextEvent('stream.post.created')).data).toEqual(only.body.post);

    const mixed = await publishWithMedia(server, [
      { mimeType: 'image/png' },
      { mimeType: 'application/pdf' },
      { mimeType: 'video/mp4' },
    ]);
    expect(mixed.status).toBe(201);
    expect((mixed.body.mediaUploadURLs as { type: string }[]).map((upload) => upload.type)).toEqual([
      'image/png',
      'video/mp4',
    ]);
    expect((mixed.body.post.metadata.media as { type: string }[]).map((item) => item.type)).toEqual([
      'image/png',
      'video/mp4',
    ]);
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
    // The first post's address still takes uploads.
    expect((await put(first.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(200);
    expect((await put(first.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(200);
  });
});

describe('upload caps per stream', () => {
  it('refuses a stream past 100 open addresses, storing nothing, while another stream still gets its own', async () => {
    const server = await startTestServer();
    const four = Array.from({ length: 4 }, () => ({ mimeType: 'image/png' }));
    const replies = await Promise.all(Array.from({ length: 25 }, () => publishWithMedia(server, four)));
    expect(replies.map((reply) => reply.status)).toEqual(Array(25).fill(201));
    const posts = (await server.state()).posts;

    const refused = await publishWithMedia(server, [{ mimeType: 'image/png' }]);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('limit-exceeded');
    expect(refused.body.error.message).toContain('macro-wire');
    expect((await server.state()).posts).toBe(posts);
    // An upload does not close an address (it takes more until it lapses): still full.
    expect((await put(replies[0]!.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(200);
    expect((await publishWithMedia(server, [{ mimeType: 'image/png' }])).status).toBe(403);

    const other = await publishWithMedia(server, [{ mimeType: 'image/png' }], {}, CRYPTO_LEGAL);
    expect(other.status).toBe(201);
    expect((await put(other.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(200);

    // Lapsed addresses make room again.
    await advanceClock(server, 60 * MINUTE + 1);
    expect((await publishWithMedia(server, [{ mimeType: 'image/png' }])).status).toBe(201);
  });

  it('refuses every stream past 1,000 open addresses for the whole service', async () => {
    const server = await startTestServer({ seed: directorySeed() });
    // Eleven streams that are not custom (a custom one needs a target): ten fill the service's cap.
    const streams = ['s01', 's02', 's03', 's05', 's06', 's07', 's09', 's10', 's11', 's13', 's14'].map((id) => ({
      id,
      key: `sp_test_stream_${id}`,
    }));
    const four = Array.from({ length: 4 }, () => ({ mimeType: 'image/png' }));
    for (const stream of streams.slice(0, 10)) {
      const replies = await Promise.all(Array.from({ length: 25 }, () => publishWithMedia(server, four, {}, stream)));
      expect(replies.every((reply) => reply.status === 201)).toBe(true);
    }
    const refused = await publishWithMedia(server, [{ mimeType: 'image/png' }], {}, streams[10]);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('limit-exceeded');
    expect(refused.body.error.message).toContain('1000');
  });

  it('refuses a stream past 64 MiB of media (a replaced file counts once), while another stream still uploads', async () => {
    const server = await startTestServer();
    const four = Array.from({ length: 4 }, () => ({ mimeType: 'image/png' }));
    const uploads = (await Promise.all([publishWithMedia(server, four), publishWithMedia(server, four)])).flatMap(
      (reply) => (reply.body.mediaUploadURLs as { url: string }[]).map((upload) => upload.url),
    );
    const tenMib = Buffer.alloc(10 * MIB, 1);
    for (const url of uploads.slice(0, 6)) expect((await put(url, 'image/png', tenMib)).status).toBe(200);
    expect((await put(uploads[6]!, 'image/png', Buffer.alloc(4 * MIB))).status).toBe(200);
    // 64 MiB kept: replacing a file with one as large takes no more room; one more KiB does not fit.
    expect((await put(uploads[0]!, 'image/png', tenMib)).status).toBe(200);
    // (A small refused body: the refusal closes the connection without reading it.)
    const full = await put(uploads[7]!, 'image/png', Buffer.alloc(1024));
    expect(full.status).toBe(507);
    expect(full.body.error.code).toBe('limit-exceeded');
    expect(full.body.error.message).toContain('stream');
    expect((await put(uploads[6]!, 'image/png', Buffer.alloc(3 * MIB))).status).toBe(200);
    expect((await put(uploads[7]!, 'image/png', Buffer.alloc(1024))).status).toBe(200);

    const other = await publishWithMedia(server, [{ mimeType: 'image/png' }], {}, CRYPTO_LEGAL);
    expect((await put(other.body.mediaUploadURLs[0].url, 'image/png', tenMib)).status).toBe(200);
  });
});

/** `count` posts on macro-wire over one connection, acknowledged in order. */
async function fillHistory(server: StreamPostsServer, count: number): Promise<void> {
  const publisher = await connectAs(server, KEYS.macroWire);
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      publisher.request('add-stream-post', { streamId: 'macro-wire', content: `filler ${i}`, contentType: 'rawtext' }),
    ),
  );
  publisher.close();
}

// On a Redis store, media out of the history leave when the stream next needs room (a publish
// with media, an upload): each check below follows one.
describe('media and their post', () => {
  it('leave with their post when it leaves the history, and free their room', async () => {
    const server = await startTestServer();
    const four = Array.from({ length: 4 }, () => ({ mimeType: 'image/png' }));
    const first = await publishWithMedia(server, four);
    const served = (first.body.post.metadata.media as { url: string }[]).map((item) => item.url);
    const tenMib = Buffer.alloc(10 * MIB, 2);
    for (const { url } of first.body.mediaUploadURLs as { url: string }[])
      expect((await put(url, 'image/png', tenMib)).status).toBe(200);
    const second = await publishWithMedia(server, four);
    const [a, b, c, d] = (second.body.mediaUploadURLs as { url: string }[]).map((upload) => upload.url);
    expect((await put(a!, 'image/png', tenMib)).status).toBe(200);
    expect((await put(b!, 'image/png', tenMib)).status).toBe(200);
    expect((await put(c!, 'image/png', Buffer.alloc(4 * MIB))).status).toBe(200);
    expect((await put(d!, 'image/png', PNG)).status).toBe(507);

    // 99 newer posts: the first one is the oldest of the history's 100, then out.
    await fillHistory(server, 98);
    expect((await put(d!, 'image/png', PNG)).status).toBe(507);
    expect((await get(served[0]!)).status).toBe(200);
    await fillHistory(server, 1);
    expect((await put(d!, 'image/png', PNG)).status).toBe(200);
    for (const url of served) expect((await get(url)).status).toBe(404);
    expect((await put(first.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(404);
  });

  it('of a hidden post out of the history stay until its release, then leave with the next post', async () => {
    const server = await startTestServer();
    const releaseAt = new Date(Date.parse((await server.state()).now) + 60 * MINUTE).toISOString();
    const hidden = await publishWithMedia(server, [{ mimeType: 'image/png' }], { releaseAt });
    expect((await put(hidden.body.mediaUploadURLs[0].url, 'image/png', PNG)).status).toBe(200);
    const served = hidden.body.post.metadata.media[0].url as string;

    await fillHistory(server, 100);
    expect((await publishWithMedia(server, [{ mimeType: 'image/png' }])).status).toBe(201);
    expect((await get(served, KEYS.macroWire)).status).toBe(200);
    expect((await get(served)).status).toBe(404);

    // Released: delivered with its media URLs, which its readers fetch then.
    await advanceClock(server, 60 * MINUTE);
    expect((await get(served)).bytes.equals(PNG)).toBe(true);
    expect((await publishWithMedia(server, [{ mimeType: 'image/png' }])).status).toBe(201);
    expect((await get(served)).status).toBe(404);
  });
});
