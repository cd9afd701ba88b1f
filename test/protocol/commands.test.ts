import { describe, expect, it } from 'vitest';
import { parseIsoDateTime } from '../../src/protocol/dates.js';
import {
  parseCommandArgs,
  parseCommandFrame,
  queryToArgs,
  splitStreamIds,
  type FrameParseResult,
} from '../../src/protocol/commands.js';
import { ProtocolError } from '../../src/protocol/errors.js';
import type { CommandName, PublishArgs } from '../../src/protocol/types.js';

const KIB64 = 64 * 1024;

/** The ProtocolError thrown by `parseCommandArgs`, or a failure if none was thrown. */
function argsError(event: CommandName, data: unknown): ProtocolError {
  try {
    parseCommandArgs(event, data);
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(data)} to be rejected`);
}

function failure(result: FrameParseResult): Extract<FrameParseResult, { ok: false }> {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.command)}`);
  return result;
}

describe('splitStreamIds', () => {
  it.each([
    ['', []],
    [' , ,', []],
    ['a', ['a']],
    ['a, b', ['a', 'b']],
    ['a,,b , c ', ['a', 'b', 'c']],
    ['a,b,a', ['a', 'b']],
    [
      ['a', ' b'],
      ['a', 'b'],
    ],
    [['a', '', ' ', 'a'], ['a']],
    [[], []],
  ] as [string | string[], string[]][])('%j → %j', (input, expected) => {
    expect(splitStreamIds(input)).toEqual(expected);
  });
});

describe('subscribe arguments', () => {
  it.each([
    ['streamIds omitted', {}, [], 0],
    ['data undefined', undefined, [], 0],
    ['data null', null, [], 0],
    ['streamIds ""', { streamIds: '' }, [], 0],
    ['streamIds " , ,"', { streamIds: ' , ,' }, [], 0],
    ['streamIds "a, b"', { streamIds: 'a, b' }, ['a', 'b'], 0],
    ['streamIds array', { streamIds: ['a', ' b'] }, ['a', 'b'], 0],
    ['duplicate ids', { streamIds: 'a,b,a, b' }, ['a', 'b'], 0],
    ['lastPosts number', { lastPosts: 5 }, [], 5],
    ['lastPosts numeric string', { lastPosts: '5' }, [], 5],
    ['lastPosts 0', { lastPosts: 0 }, [], 0],
    ['lastPosts 100', { lastPosts: 100 }, [], 100],
    ['lastPosts "100"', { lastPosts: '100' }, [], 100],
  ])('%s', (_name, data, streamIds, lastPosts) => {
    for (const event of ['on-stream-post', 'on-stream-post-tree'] as const) {
      expect(parseCommandArgs(event, data)).toEqual({ event, data: { streamIds, lastPosts } });
    }
  });

  it.each([
    ['lastPosts -1', { lastPosts: -1 }, 'lastPosts'],
    ['lastPosts 101', { lastPosts: 101 }, 'lastPosts'],
    ['lastPosts "101"', { lastPosts: '101' }, 'lastPosts'],
    ['lastPosts 1.5', { lastPosts: 1.5 }, 'lastPosts'],
    ['lastPosts "abc"', { lastPosts: 'abc' }, 'lastPosts'],
    ['lastPosts "-1"', { lastPosts: '-1' }, 'lastPosts'],
    ['lastPosts true', { lastPosts: true }, 'lastPosts'],
    ['streamIds number', { streamIds: 5 }, 'streamIds'],
    ['streamIds object', { streamIds: { a: 1 } }, 'streamIds'],
    ['streamIds array of numbers', { streamIds: [1, 2] }, 'streamIds'],
  ])('%s → invalid-argument whose message starts with the field', (_name, data, field) => {
    const error = argsError('on-stream-post', data);
    expect(error.code).toBe('invalid-argument');
    expect(error.command).toBe('on-stream-post');
    expect(error.message).toMatch(new RegExp(`^${field} `));
  });
});

describe('publish arguments', () => {
  const valid = { streamId: 'macro-wire', content: 'hello', contentType: 'markdown' };
  const parsed: PublishArgs = {
    streamId: 'macro-wire',
    content: 'hello',
    contentType: 'markdown',
    releaseAt: null,
    customTarget: null,
    idempotencyKey: null,
  };

  it.each([
    ['the minimum', {}, {}],
    ['rawtext', { contentType: 'rawtext' }, { contentType: 'rawtext' }],
    ['a 64-character id', { streamId: 'A'.repeat(64) }, { streamId: 'A'.repeat(64) }],
    ['id with _ and -', { streamId: 'a_B-9' }, { streamId: 'a_B-9' }],
    ['ASCII content of exactly 64 KiB', { content: 'a'.repeat(KIB64) }, { content: 'a'.repeat(KIB64) }],
    ['2-byte content of exactly 64 KiB', { content: 'é'.repeat(KIB64 / 2) }, { content: 'é'.repeat(KIB64 / 2) }],
    ['3-byte content of exactly 64 KiB', { content: '€'.repeat(21845) + 'a' }, { content: '€'.repeat(21845) + 'a' }],
    ['4-byte content of exactly 64 KiB', { content: '🚀'.repeat(KIB64 / 4) }, { content: '🚀'.repeat(KIB64 / 4) }],
    ['releaseAt in Z', { releaseAt: '2026-12-01T10:00:00Z' }, { releaseAt: '2026-12-01T10:00:00Z' }],
    ['releaseAt with ms', { releaseAt: '2026-12-01T10:00:00.000Z' }, { releaseAt: '2026-12-01T10:00:00.000Z' }],
    ['releaseAt +02:00', { releaseAt: '2026-12-01T10:00:00+02:00' }, { releaseAt: '2026-12-01T10:00:00+02:00' }],
    ['releaseAt null', { releaseAt: null }, {}],
    ['customTarget', { customTarget: 'BTC' }, { customTarget: 'BTC' }],
    ['idempotencyKey of 1', { idempotencyKey: 'k' }, { idempotencyKey: 'k' }],
    ['idempotencyKey of 256', { idempotencyKey: 'k'.repeat(256) }, { idempotencyKey: 'k'.repeat(256) }],
    ['unknown fields dropped', { extra: 1 }, {}],
    ['no contentType, as rawtext', { contentType: undefined }, { contentType: 'rawtext' }],
    ['contentType null, as rawtext', { contentType: null }, { contentType: 'rawtext' }],
    ["a hosted publisher's extra fields, ignored", { id: 'x1', createdAt: 1_795_262_400_000 }, {}],
  ])('accepts %s', (_name, change, expected) => {
    const command = parseCommandArgs('add-stream-post', { ...valid, ...change });
    expect(command).toEqual({ event: 'add-stream-post', data: { ...parsed, ...expected } });
  });

  it.each([
    ['missing streamId', { streamId: undefined }, 'streamId'],
    ['numeric streamId', { streamId: 7 }, 'streamId'],
    ['empty streamId', { streamId: '' }, 'streamId'],
    ['streamId with a space', { streamId: 'a b' }, 'streamId'],
    ['streamId with a slash', { streamId: 'a/b' }, 'streamId'],
    ['streamId with a dot', { streamId: 'a.b' }, 'streamId'],
    ['65-character streamId', { streamId: 'A'.repeat(65) }, 'streamId'],
    ['missing content', { content: undefined }, 'content'],
    ['empty content', { content: '' }, 'content'],
    ['content not a string', { content: 42 }, 'content'],
    ['ASCII content of 64 KiB + 1', { content: 'a'.repeat(KIB64 + 1) }, 'content'],
    ['2-byte content of 64 KiB + 1', { content: 'é'.repeat(KIB64 / 2 - 1) + 'aaa' }, 'content'],
    ['3-byte content of 64 KiB + 1', { content: '€'.repeat(21845) + 'é' }, 'content'],
    ['4-byte content of 64 KiB + 1', { content: '🚀'.repeat(KIB64 / 4) + 'a' }, 'content'],
    ['contentType html', { contentType: 'html' }, 'contentType'],
    ['contentType Markdown', { contentType: 'Markdown' }, 'contentType'],
    ['releaseAt "tomorrow"', { releaseAt: 'tomorrow' }, 'releaseAt'],
    ['releaseAt without a zone', { releaseAt: '2026-12-01T10:00:00' }, 'releaseAt'],
    ['releaseAt date only', { releaseAt: '2026-12-01' }, 'releaseAt'],
    ['releaseAt number', { releaseAt: 1_800_000_000_000 }, 'releaseAt'],
    ['customTarget ""', { customTarget: '' }, 'customTarget'],
    ['customTarget number', { customTarget: 1 }, 'customTarget'],
    ['idempotencyKey ""', { idempotencyKey: '' }, 'idempotencyKey'],
    ['idempotencyKey of 257', { idempotencyKey: 'k'.repeat(257) }, 'idempotencyKey'],
    ['idempotencyKey number', { idempotencyKey: 5 }, 'idempotencyKey'],
  ])('rejects %s', (_name, change, field) => {
    const error = argsError('add-stream-post', { ...valid, ...change });
    expect(error.code).toBe('invalid-argument');
    expect(error.command).toBe('add-stream-post');
    expect(error.message).toMatch(new RegExp(`^${field} `));
  });

  it('names the exact contentType rule', () => {
    expect(argsError('add-stream-post', { ...valid, contentType: 'html' }).message).toBe(
      'contentType must be "rawtext" or "markdown"',
    );
  });
});

describe('parseCommandFrame', () => {
  it.each([
    ['not JSON', '{event:', 'bad-json'],
    ['empty text', '', 'bad-json'],
    ['an array', '[{"event":"on-stream-post"}]', 'bad-request'],
    ['a number', '42', 'bad-request'],
    ['null', 'null', 'bad-request'],
    ['a string', '"on-stream-post"', 'bad-request'],
    ['no event', '{"data":{}}', 'bad-request'],
    ['event a number', '{"event":1}', 'bad-request'],
    ['event null', '{"event":null}', 'bad-request'],
    ['unknown event', '{"event":"delete-everything"}', 'unknown-command'],
    ['requestId a number', '{"event":"on-stream-post","requestId":5}', 'bad-request'],
    ['requestId an object', '{"event":"on-stream-post","requestId":{}}', 'bad-request'],
    ['requestId too long', JSON.stringify({ event: 'on-stream-post', requestId: 'r'.repeat(257) }), 'bad-request'],
    ['data an array', '{"event":"on-stream-post","data":[]}', 'invalid-argument'],
    ['data a string', '{"event":"on-stream-post","data":"streamIds=a"}', 'invalid-argument'],
    ['data a number', '{"event":"add-stream-post","data":1}', 'invalid-argument'],
  ])('%s → %s', (_name, text, code) => {
    const result = failure(parseCommandFrame(text));
    expect(result.error).toBeInstanceOf(ProtocolError);
    expect(result.error.code).toBe(code);
    expect(result).not.toHaveProperty('requestId');
  });

  it('names the unknown command', () => {
    expect(failure(parseCommandFrame('{"event":"nope"}')).error.message).toContain('"nope"');
  });

  it.each([
    ['no event', { data: {} }, 'bad-request'],
    ['unknown event', { event: 'nope' }, 'unknown-command'],
    ['data not an object', { event: 'on-stream-post', data: 7 }, 'invalid-argument'],
    ['bad argument', { event: 'on-stream-post', data: { lastPosts: 101 } }, 'invalid-argument'],
    ['bad publish', { event: 'add-stream-post', data: { streamId: 'x' } }, 'invalid-argument'],
  ])('echoes a readable requestId on failure: %s', (_name, frame, code) => {
    const result = failure(parseCommandFrame(JSON.stringify({ ...frame, requestId: 'req-1' })));
    expect(result.error.code).toBe(code);
    expect(result.requestId).toBe('req-1');
  });

  it.each([
    ['with requestId', { requestId: 'abc' }, { requestId: 'abc' }],
    ['with requestId of 256', { requestId: 'r'.repeat(256) }, { requestId: 'r'.repeat(256) }],
    ['without requestId', {}, {}],
  ])('parses a subscribe frame %s', (_name, extra, expected) => {
    const text = JSON.stringify({ event: 'on-stream-post-tree', data: { streamIds: 'a,b', lastPosts: '3' }, ...extra });
    expect(parseCommandFrame(text)).toEqual({
      ok: true,
      command: { event: 'on-stream-post-tree', data: { streamIds: ['a', 'b'], lastPosts: 3 }, ...expected },
    });
  });

  it('parses a publish frame and echoes its requestId', () => {
    const text = JSON.stringify({
      event: 'add-stream-post',
      requestId: 'p1',
      data: { streamId: 's', content: 'x', contentType: 'rawtext', idempotencyKey: 'k' },
    });
    expect(parseCommandFrame(text)).toEqual({
      ok: true,
      command: {
        event: 'add-stream-post',
        requestId: 'p1',
        data: {
          streamId: 's',
          content: 'x',
          contentType: 'rawtext',
          releaseAt: null,
          customTarget: null,
          idempotencyKey: 'k',
        },
      },
    });
  });
});

describe('queryToArgs', () => {
  it.each([
    ['apiKey=K&streamIds=a,b&lastPosts=5', { streamIds: 'a,b', lastPosts: '5' }],
    ['apiKey=K', {}],
    ['streamIds=', { streamIds: '' }],
    ['streamIds=a%2Cb&x=1', { streamIds: 'a,b', x: '1' }],
  ])('%s → %j', (query, expected) => {
    expect(queryToArgs(new URLSearchParams(query))).toEqual(expected);
  });

  it('feeds parseCommandArgs with strings as the URL form sends them', () => {
    const args = queryToArgs(new URLSearchParams('apiKey=K&streamIds=a,%20b&lastPosts=5'));
    expect(parseCommandArgs('on-stream-post', args)).toEqual({
      event: 'on-stream-post',
      data: { streamIds: ['a', 'b'], lastPosts: 5 },
    });
  });
});

describe('parseIsoDateTime', () => {
  it.each([
    ['2026-12-01T10:00:00Z', Date.UTC(2026, 11, 1, 10)],
    ['2026-12-01T10:00Z', Date.UTC(2026, 11, 1, 10)],
    ['2026-12-01T10:00:00.5Z', Date.UTC(2026, 11, 1, 10, 0, 0, 500)],
    ['2026-12-01T12:00:00+02:00', Date.UTC(2026, 11, 1, 10)],
    ['2026-12-01T12:00:00+0200', Date.UTC(2026, 11, 1, 10)],
    ['2026-12-01T12:00:00+02', Date.UTC(2026, 11, 1, 10)],
    ['2026-12-01T05:00:00-05:00', Date.UTC(2026, 11, 1, 10)],
    ['2028-02-29T10:00:00Z', Date.UTC(2028, 1, 29, 10)],
    // Years 0-99 are years 0-99, not 1900-1999.
    ['0099-12-31T23:59:59Z', -59_011_459_201_000],
    ['0000-01-01T00:00:00Z', -62_167_219_200_000],
  ])('%s is %d', (text, expected) => {
    expect(parseIsoDateTime(text)).toBe(expected);
  });

  it.each([
    '2026-12-01T10:00:00',
    '2026-12-01',
    'tomorrow',
    '2026-13-01T10:00:00Z',
    '2026-12-01T25:00:00Z',
    '2030-02-30T10:00:00Z',
    '2029-02-29T10:00:00Z',
    '2030-04-31T10:00:00Z',
    '',
  ])('rejects %j', (text) => {
    expect(parseIsoDateTime(text)).toBeUndefined();
  });
});
