import { describe, expect, it } from 'vitest';
import { connect, type TracedFrame } from '../../src/index.js';
import { client, take } from '../support/api.js';
import { startTestServer as server } from '../support/harness.js';

describe('onFrame', () => {
  it('is told each frame sent and received, as it went over the wire, the key cut out', async () => {
    const service = await server();
    const key = service.keys.streams['macro-wire']!;
    const frames: TracedFrame[] = [];
    const desk = await client({ url: service.url, apiKey: key, onFrame: (frame) => frames.push(frame) });
    const posts = desk.subscribe({ streamIds: ['macro-wire'] });
    await posts.ready;
    // A post that quotes the key: the trace shows where it was, never what it was.
    const { post } = await desk.publish({ streamId: 'macro-wire', content: `the key is ${key}` });
    await take(posts[Symbol.asyncIterator](), 1);
    const sent = frames.filter((frame) => frame.direction === 'sent').map((frame) => JSON.parse(frame.text));
    const received = frames.filter((frame) => frame.direction === 'received').map((frame) => JSON.parse(frame.text));
    expect(sent.map((frame) => frame.event)).toEqual(['on-stream-post', 'add-stream-post']);
    expect(sent[1].data.content).toBe('the key is [redacted]');
    expect(received.map((frame) => frame.event)).toEqual(
      expect.arrayContaining(['connected', 'sub_ack', 'ack', 'stream.post.created']),
    );
    expect(received.find((frame) => frame.event === 'ack').data.post.id).toBe(post.id);
    expect(JSON.stringify(frames)).not.toContain(key);
  });

  it('must be a function', async () => {
    await expect(connect({ url: 'ws://127.0.0.1:1', apiKey: 'k', onFrame: 'yes' as never })).rejects.toThrow(
      /onFrame must be a function/,
    );
  });
});
