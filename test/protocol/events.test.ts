import { describe, expect, it } from 'vitest';
import { encodeError, encodeEvent, parsePost, parseServerMessage } from '../../src/protocol/events.js';
import type { Post } from '../../src/protocol/types.js';
import { samplePost } from '../support/fixtures.js';

const wirePost: Post = samplePost({ streamId: 'crypto-legal' });

describe('encodeEvent / encodeError', () => {
  it.each<[string, Parameters<typeof encodeEvent>, Record<string, unknown>]>([
    ['without requestId', ['keep-alive', {}], { event: 'keep-alive', data: {} }],
    [
      'with requestId',
      ['sub_ack', { lastPosts: 1 }, 'r1'],
      { event: 'sub_ack', data: { lastPosts: 1 }, requestId: 'r1' },
    ],
    ['with data true', ['ack', true], { event: 'ack', data: true }],
  ])('%s', (_name, args, expected) => {
    const text = encodeEvent(...args);
    expect(JSON.parse(text)).toEqual(expected);
    expect(Object.keys(JSON.parse(text))).toEqual(Object.keys(expected));
  });

  it.each<[Parameters<typeof encodeError>, { event: string; data: Record<string, unknown>; requestId?: string }]>([
    [
      ['bad-json', 'the frame is not valid JSON'],
      { event: 'error', data: { code: 'bad-json', message: 'the frame is not valid JSON' } },
    ],
    [
      ['forbidden', 'nope', 'add-stream-post'],
      { event: 'error', data: { code: 'forbidden', message: 'nope', command: 'add-stream-post' } },
    ],
    [
      ['not-found', 'no such stream', 'on-stream-post', 'q7'],
      {
        event: 'error',
        data: { code: 'not-found', message: 'no such stream', command: 'on-stream-post' },
        requestId: 'q7',
      },
    ],
    [
      ['bad-request', 'no event', undefined, 'q8'],
      { event: 'error', data: { code: 'bad-request', message: 'no event' }, requestId: 'q8' },
    ],
  ])('encodeError%j', (args, expected) => {
    const parsed = JSON.parse(encodeError(...args));
    expect(parsed).toEqual(expected);
    expect(Object.keys(parsed.data)).toEqual(Object.keys(expected.data));
  });
});

describe('parsePost (tolerant reader)', () => {
  it.each([
    ['the strict form', wirePost, wirePost],
    [
      'content where text is missing',
      { ...wirePost, text: undefined, content: 'from content' },
      { ...wirePost, text: 'from content' },
    ],
    [
      'content where text is null',
      { ...wirePost, text: null, content: 'from content' },
      { ...wirePost, text: 'from content' },
    ],
    ['text preferred over content', { ...wirePost, content: 'other' }, wirePost],
    [
      'hidden post with null text',
      { ...wirePost, text: null, hidden: true },
      { ...wirePost, text: null, hidden: true },
    ],
    ['epoch-ms createdAt', { ...wirePost, createdAt: Date.UTC(2026, 10, 21, 12) }, wirePost],
    [
      'epoch-ms releaseAt',
      { ...wirePost, releaseAt: Date.UTC(2026, 11, 1, 9, 30) },
      { ...wirePost, releaseAt: '2026-12-01T09:30:00.000Z' },
    ],
    ['unknown fields ignored', { ...wirePost, likes: 3, author: { id: 'x' } }, wirePost],
    [
      'only the required fields',
      { id: 'p1', streamId: 's1' },
      {
        id: 'p1',
        streamId: 's1',
        streamName: 's1',
        text: null,
        contentType: 'rawtext',
        createdAt: '1970-01-01T00:00:00.000Z',
        releaseAt: null,
        hidden: false,
        customTarget: null,
      },
    ],
    [
      'unknown contentType read as rawtext',
      { ...wirePost, contentType: 'html' },
      { ...wirePost, contentType: 'rawtext' },
    ],
  ])('accepts %s', (_name, input, expected) => {
    expect(parsePost(input)).toEqual(expected);
  });

  it.each([
    ['no id', { ...wirePost, id: undefined }],
    ['numeric id', { ...wirePost, id: 1 }],
    ['no streamId', { ...wirePost, streamId: undefined }],
    ['null', null],
    ['a string', 'post'],
  ])('rejects %s', (_name, input) => {
    expect(parsePost(input)).toBeUndefined();
  });
});

describe('parseServerMessage', () => {
  const frame = (value: unknown) => JSON.stringify(value);

  it.each([
    [
      'connected',
      { event: 'connected', data: { message: 'connected', userId: 'alice', streams: ['a', 'b'] } },
      { kind: 'connected', userId: 'alice', streams: ['a', 'b'] },
    ],
    [
      'sub_ack with requestId',
      { event: 'sub_ack', data: { command: 'on-stream-post', streamIds: ['a'], lastPosts: 5 }, requestId: 'r1' },
      { kind: 'sub_ack', command: 'on-stream-post', streamIds: ['a'], lastPosts: 5, requestId: 'r1' },
    ],
    [
      'stream.post.created',
      { event: 'stream.post.created', data: wirePost },
      { kind: 'post', released: false, post: wirePost },
    ],
    [
      'stream.post.created from a content/epoch server',
      {
        event: 'stream.post.created',
        data: { ...wirePost, text: undefined, content: 'c', createdAt: Date.UTC(2026, 10, 21, 12) },
      },
      { kind: 'post', released: false, post: { ...wirePost, text: 'c' } },
    ],
    [
      'stream.post.released',
      { event: 'stream.post.released', data: wirePost },
      { kind: 'post', released: true, post: wirePost },
    ],
    [
      'ack',
      { event: 'ack', data: { post: wirePost, duplicate: false }, requestId: 'p1' },
      { kind: 'ack', post: wirePost, duplicate: false, requestId: 'p1' },
    ],
    [
      'duplicate ack',
      { event: 'ack', data: { post: wirePost, duplicate: true } },
      { kind: 'ack', post: wirePost, duplicate: true },
    ],
    [
      'error',
      { event: 'error', data: { code: 'forbidden', message: 'no', command: 'add-stream-post' }, requestId: 'p2' },
      { kind: 'error', code: 'forbidden', message: 'no', command: 'add-stream-post', requestId: 'p2' },
    ],
    [
      'error with an unknown code',
      { event: 'error', data: { code: 'teapot', message: 'short and stout' } },
      { kind: 'error', code: 'teapot', message: 'short and stout' },
    ],
    ['keep-alive', { event: 'keep-alive', data: {} }, { kind: 'ignored', event: 'keep-alive' }],
    [
      'unknown event',
      { event: 'stream.post.deleted', data: { id: 'x' } },
      { kind: 'ignored', event: 'stream.post.deleted' },
    ],
    [
      'post event without a post',
      { event: 'stream.post.created', data: { text: 'x' } },
      { kind: 'ignored', event: 'stream.post.created' },
    ],
    ['an array', [1, 2], { kind: 'ignored' }],
    ['a number', 7, { kind: 'ignored' }],
    ['null', null, { kind: 'ignored' }],
    ['object with neither event nor _id', { hello: 'world' }, { kind: 'ignored' }],
  ])('%s', (_name, message, expected) => {
    expect(parseServerMessage(frame(message))).toEqual(expected);
  });

  it('ignores unknown top-level and data fields', () => {
    const message = { event: 'connected', data: { userId: 'bob', streams: [], extra: 1 }, server: 'v9' };
    expect(parseServerMessage(frame(message))).toEqual({ kind: 'connected', userId: 'bob', streams: [] });
  });

  it('reads a bare object with _id and no event as a tree item', () => {
    const item = {
      _id: '01JWEX3G5B1P2FMXKPJAHEMTTH',
      title: 'Crypto Legal Updates',
      body: 'x',
      source: 'Crypto Legal Updates',
      time: 1763726400000,
      type: 'stream-post',
      contentType: 'markdown',
      streamId: 's',
      hidden: false,
    };
    expect(parseServerMessage(frame(item))).toEqual({ kind: 'tree', item });
  });

  it.each([['{not json'], [''], ['{"event":"ack"'], ['undefined']])('malformed JSON %j → ignored', (text) => {
    expect(parseServerMessage(text)).toEqual({ kind: 'ignored' });
  });

  it.each([
    ['createdAt', { createdAt: 1e20 }],
    ['releaseAt', { releaseAt: -1e20 }],
  ])('an out-of-range epoch %s does not throw', (_name, change) => {
    const text = frame({ event: 'stream.post.created', data: { ...wirePost, ...change } });
    expect(() => parseServerMessage(text)).not.toThrow();
  });
});
