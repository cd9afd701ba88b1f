import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { isPlainObject } from '../../src/protocol/objects.js';
import { COMMANDS } from '../../src/protocol/types.js';
import type { StreamPostsServer } from '../../src/index.js';
import { adminState, http, KEYS, startTestServer } from '../support/harness.js';
import { clientFrame, OPCODE, parseServerBytes, rawConnect, readAll, upgradeRequest } from '../support/raw-peer.js';
import { connectWire, request, type WireClient } from '../support/wire.js';
import { envelopeProblems, errorProblems, postProblems } from '../support/shapes.js';

const SEED = 20_250_611;
const RUNS = 500;
const RAW_RUNS = 60;
const MiB = 1024 * 1024;
/** Generous waits (other suites run benchmarks on this machine); a missing reply fails after this. */
const WAIT_MS = 10_000;

// --- who sends: the demo seed's keys ----------------------------------------

type Role = 'macro' | 'whale' | 'alice' | 'bob';
const ROLE_KEY: Record<Role, string> = {
  macro: KEYS.macroWire,
  whale: KEYS.whaleAlerts,
  alice: KEYS.alice,
  bob: KEYS.bob,
};
/** The streams each role's user follows or owns, in the server's order. */
const ROLE_STREAMS: Record<Role, string[]> = {
  macro: ['crypto-legal', 'macro-wire', 'whale-alerts'],
  whale: ['crypto-legal', 'macro-wire', 'whale-alerts'],
  alice: ['crypto-legal', 'macro-wire', 'whale-alerts'],
  bob: ['macro-wire', 'whale-alerts'],
};
/** The one stream a role may publish to (a stream key's own), if any. */
const ROLE_PUBLISHES: Record<Role, string | undefined> = {
  macro: 'macro-wire',
  whale: 'whale-alerts',
  alice: undefined,
  bob: undefined,
};
const ROLES = Object.keys(ROLE_KEY) as Role[];
const ALL_STREAMS = ROLE_STREAMS.alice;
const WHALE_TARGETS = ['BTC', 'ETH', 'SOL'];

// --- what is sent -------------------------------------------------------------

type Frame =
  | { kind: 'text'; text: string }
  /** Bytes sent as a text frame: invalid UTF-8 must close the connection with 1007. */
  | { kind: 'text-bytes'; bytes: Buffer }
  | { kind: 'binary'; bytes: Buffer };

interface Case {
  role: Role;
  frame: Frame;
  /** Set when the command is valid by construction and must succeed. */
  valid?: 'ack' | 'sub_ack';
  label: string;
}

function frameBytes(frame: Frame): number {
  return frame.kind === 'text' ? Buffer.byteLength(frame.text) : frame.bytes.length;
}

/** A short, printable form of a case for fast-check's counterexample report. */
function withPrinter(c: Case): Case {
  const shown =
    c.frame.kind === 'text'
      ? JSON.stringify(
          c.frame.text.length > 400 ? `${c.frame.text.slice(0, 400)}… (${c.frame.text.length} chars)` : c.frame.text,
        )
      : `<${c.frame.bytes.length} bytes ${c.frame.bytes.subarray(0, 64).toString('hex')}…>`;
  return Object.assign(c, { [fc.toStringMethod]: () => `${c.label} [${c.role}] ${c.frame.kind} ${shown}` });
}

type Command = Record<string, unknown>;

function textCase(role: Role, command: unknown, label: string, valid?: Case['valid']): Case {
  const c: Case = { role, frame: { kind: 'text', text: JSON.stringify(command) }, label };
  if (valid) c.valid = valid;
  return c;
}

/** Strings that break things: empty, huge, control characters, lone surrogates, look-alikes. */
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit));
const nastyString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ maxLength: 20 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }), weight: 2 },
  {
    arbitrary: fc.string({
      unit: fc.oneof(
        loneSurrogate,
        fc.constantFrom('\u0000', '\u202e', '\ufeff', '\u2028', '"', '\\', ',', ' ', '\u00a0', '\n'),
      ),
      maxLength: 12,
    }),
    weight: 2,
  },
  {
    arbitrary: fc.constantFrom(
      '',
      ' ',
      ',',
      ' , ,',
      '__proto__',
      'constructor',
      'toString',
      'null',
      'NaN',
      '-1',
      '1e3',
      '0x10',
      '٣',
    ),
    weight: 2,
  },
  { arbitrary: fc.integer({ min: 65_000, max: 300_000 }).map((n) => 'é'.repeat(n / 2)), weight: 1 },
);

const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: nastyString, weight: 4 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 3 },
  { arbitrary: fc.constantFrom(null, true, false, 0, -0, -1, 2.5, 1e308, -1e308, 2 ** 53 + 1, [], {}), weight: 2 },
  { arbitrary: fc.array(nastyString, { maxLength: 5 }), weight: 1 },
  { arbitrary: fc.dictionary(nastyString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }), weight: 1 },
);

const badDate = fc.constantFrom<unknown>(
  'soon',
  '',
  '2030-02-30T10:00:00Z',
  '2030-13-01T10:00:00Z',
  '2030-01-01',
  '2030-01-01T10:00:00',
  '2030-01-01T24:00:00Z',
  '2030-01-01T23:59:60Z',
  '2030-1-1T10:00:00Z',
  '99999-01-01T00:00:00Z',
  '+275760-09-13T00:00:00.000Z',
  '0000-01-01T00:00:00Z',
  '2030-01-01T10:00:00+25:00',
  '2030-01-01T10:00:00+05:60',
  '2030-01-01T10:00:00.1234567891Z',
  ' 2030-01-01T10:00:00Z ',
  '2030-01-01t10:00:00z',
  'Tue, 01 Jan 2030 10:00:00 GMT',
  '1893456000000',
  1893456000000,
  -1,
  '2030-01-01T10:00:00Z\u0000',
);

const badStreamId = fc.constantFrom<unknown>(
  'crypto-legal',
  'whale-alerts',
  'macro-wire',
  'Macro-Wire',
  'macro-wire ',
  ' macro-wire',
  'no-such-stream',
  '',
  'a'.repeat(64),
  'a'.repeat(65),
  'macro-wire,crypto-legal',
  '../macro-wire',
  '__proto__',
  'hasOwnProperty',
  ['macro-wire'],
);

const badStreamIds = fc.oneof(
  fc.constantFrom<unknown>(
    'macro-wire,no-such-stream',
    'crypto-legal',
    'macro-wire;whale-alerts',
    '__proto__',
    ['macro-wire', 5],
    [['macro-wire']],
    [null],
    { 0: 'macro-wire' },
    Array.from({ length: 2000 }, (_, i) => `nope-${i}`),
    Array.from({ length: 2000 }, () => 'macro-wire').join(','),
  ),
  fc.array(fc.oneof(fc.constantFrom(...ALL_STREAMS), nastyString), { maxLength: 6 }),
  fc.array(fc.oneof(fc.constantFrom(...ALL_STREAMS), nastyString), { maxLength: 6 }).map((ids) => ids.join(',')),
);

const badLastPosts = fc.constantFrom<unknown>(
  -1,
  101,
  2.5,
  '5',
  ' 7 ',
  '1e2',
  '0x10',
  '',
  ' ',
  '-0',
  -0,
  1e308,
  '100',
  '101',
  true,
  null,
  [],
  {},
  '٣',
  '9'.repeat(400),
  '0'.repeat(40) + '5',
  '\u2003 7',
);

// --- valid commands, by construction -------------------------------------

/** An ISO 8601 date-time with a zone in one of the accepted spellings. */
const isoDateTime = fc
  .tuple(
    fc.date({ min: new Date('1971-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }),
    fc.constantFrom('ms', 'seconds', 'minutes', 'lower-z', 'comma', '+hh:mm', '+hhmm', '+hh', '-hh:mm'),
  )
  .map(([date, style]) => {
    const iso = date.toISOString();
    const offsetMinutes =
      style === '+hh:mm' ? 330 : style === '+hhmm' ? 120 : style === '+hh' ? 60 : style === '-hh:mm' ? -420 : 0;
    const local = new Date(date.getTime() + offsetMinutes * 60_000).toISOString().slice(0, 19);
    const hh = String(Math.floor(Math.abs(offsetMinutes) / 60)).padStart(2, '0');
    const mm = String(Math.abs(offsetMinutes) % 60).padStart(2, '0');
    const sign = offsetMinutes < 0 ? '-' : '+';
    switch (style) {
      case 'ms':
        return iso;
      case 'seconds':
        return `${iso.slice(0, 19)}Z`;
      case 'minutes':
        return `${iso.slice(0, 16)}Z`;
      case 'lower-z':
        return iso.toLowerCase();
      case 'comma':
        return `${iso.slice(0, 19)},${iso.slice(20, 23)}Z`;
      case '+hhmm':
        return `${local}${sign}${hh}${mm}`;
      case '+hh':
        return `${local}${sign}${hh}`;
      default:
        return `${local}${sign}${hh}:${mm}`;
    }
  });

const validContent = fc.oneof(
  { arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }), weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), weight: 2 },
  { arbitrary: fc.integer({ min: 1, max: 64 * 1024 }).map((n) => 'y'.repeat(n)), weight: 1 },
  { arbitrary: fc.constant('é'.repeat(32 * 1024)), weight: 1 },
);

/** A few keys repeat often, so deduplication is exercised; others are 1-256 UTF-16 units. */
const idempotencyKey = fc.oneof(
  { arbitrary: fc.constantFrom('k1', 'k2', 'k3'), weight: 3 },
  {
    arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 256 }).filter((key) => key.length <= 256),
    weight: 1,
  },
);

/** An optional argument: absent, explicitly null, or a value. */
function maybe<T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | null | undefined> {
  return fc.oneof(fc.constant(undefined), fc.constant(null), arbitrary);
}

function withoutUndefined(data: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(data).filter(([, value]) => value !== undefined));
}

/** A publish that the role's key may make (for a reader: what it would look like). */
function validPublish(role: Role): fc.Arbitrary<Command> {
  const streamId = ROLE_PUBLISHES[role] ?? 'macro-wire';
  return fc
    .record({
      content: validContent,
      contentType: fc.constantFrom('rawtext', 'markdown'),
      releaseAt: maybe(isoDateTime),
      idempotencyKey: maybe(idempotencyKey),
      customTarget: streamId === 'whale-alerts' ? fc.constantFrom(...WHALE_TARGETS) : fc.constantFrom(undefined, null),
      requestId: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
    })
    .map(({ requestId, ...data }) =>
      withoutUndefined({ event: 'add-stream-post', data: withoutUndefined({ streamId, ...data }), requestId }),
    );
}

/** A subscribe the role may make: some of its streams, spelled any accepted way. */
function validSubscribe(role: Role): fc.Arbitrary<Command> {
  const streams = ROLE_STREAMS[role];
  const ids = fc.subarray(streams);
  const streamIds = fc.oneof(
    fc.constant(undefined),
    fc.constantFrom('', ' , ,', []),
    ids.map((list) => list.join(',')),
    ids.map((list) => list.map((id) => `  ${id} `).join(' , ')),
    ids.map((list) => [...list, ...list].map((id) => ` ${id}`)),
  );
  const lastPosts = fc.oneof(
    fc.constant(undefined),
    fc.integer({ min: 0, max: 100 }),
    fc.integer({ min: 0, max: 100 }).map((n) => ` ${n} `),
  );
  return fc
    .record({
      event: fc.constantFrom('on-stream-post', 'on-stream-post-tree'),
      streamIds,
      lastPosts,
      noData: fc.boolean(),
      requestId: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
    })
    .map(({ event, streamIds: s, lastPosts: n, noData, requestId }) => {
      const data = withoutUndefined({ streamIds: s, lastPosts: n });
      return withoutUndefined({ event, ...(noData && Object.keys(data).length === 0 ? {} : { data }), requestId });
    });
}

// --- mutations of valid commands --------------------------------------------

interface Mutation {
  name: string;
  apply: (command: Command) => void;
}

function dataOf(command: Command): Record<string, unknown> {
  if (!isPlainObject(command['data'])) command['data'] = {};
  return command['data'] as Record<string, unknown>;
}

const DATA_KEYS = [
  'streamId',
  'content',
  'contentType',
  'releaseAt',
  'customTarget',
  'idempotencyKey',
  'streamIds',
  'lastPosts',
];

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc
    .constantFrom(...DATA_KEYS)
    .map((key) => ({ name: `drop ${key}`, apply: (c: Command) => void delete dataOf(c)[key] })),
  fc.tuple(fc.constantFrom(...DATA_KEYS), junkValue).map(([key, value]) => ({
    name: `${key}=junk`,
    apply: (c: Command) => void (dataOf(c)[key] = value),
  })),
  badDate.map((value) => ({
    name: 'releaseAt=bad date',
    apply: (c: Command) => void (dataOf(c)['releaseAt'] = value),
  })),
  badStreamId.map((value) => ({ name: 'streamId=wrong', apply: (c: Command) => void (dataOf(c)['streamId'] = value) })),
  badStreamIds.map((value) => ({
    name: 'streamIds=wrong',
    apply: (c: Command) => void (dataOf(c)['streamIds'] = value),
  })),
  badLastPosts.map((value) => ({
    name: 'lastPosts=wrong',
    apply: (c: Command) => void (dataOf(c)['lastPosts'] = value),
  })),
  fc.constantFrom('', ' ', 'x'.repeat(64 * 1024 + 1), 'é'.repeat(32 * 1024 + 1), '\u0000').map((value) => ({
    name: 'content=edge',
    apply: (c: Command) => void (dataOf(c)['content'] = value),
  })),
  fc.constantFrom('html', 'Markdown', 'RAWTEXT', 'rawtext ', '', 'text/markdown').map((value) => ({
    name: 'contentType=wrong',
    apply: (c: Command) => void (dataOf(c)['contentType'] = value),
  })),
  fc.constantFrom('btc', 'DOGE', '', 'BTC,ETH', ' BTC').map((value) => ({
    name: 'customTarget=wrong',
    apply: (c: Command) => void (dataOf(c)['customTarget'] = value),
  })),
  fc.constantFrom('', 'k'.repeat(257), 'k1').map((value) => ({
    name: 'idempotencyKey=edge',
    apply: (c: Command) => void (dataOf(c)['idempotencyKey'] = value),
  })),
  fc.tuple(nastyString, junkValue).map(([key, value]) => ({
    name: 'unknown data field',
    apply: (c: Command) =>
      void Object.defineProperty(dataOf(c), key, { value, enumerable: true, writable: true, configurable: true }),
  })),
  fc.tuple(nastyString, junkValue).map(([key, value]) => ({
    name: 'unknown top-level field',
    apply: (c: Command) =>
      void Object.defineProperty(c, key, { value, enumerable: true, writable: true, configurable: true }),
  })),
  junkValue.map((value) => ({ name: 'data=junk', apply: (c: Command) => void (c['data'] = value) })),
  fc.constant({ name: 'drop data', apply: (c: Command) => void delete c['data'] }),
  fc.constant({ name: 'data nested', apply: (c: Command) => void (c['data'] = { data: c['data'] }) }),
  fc.constant({ name: 'data in an array', apply: (c: Command) => void (c['data'] = [c['data']]) }),
  fc
    .oneof(
      fc.constantFrom<unknown>(
        'Add-Stream-Post',
        'add-stream-post ',
        'on-stream-posts',
        'on_stream_post',
        '',
        'ADD-STREAM-POST',
        null,
        7,
        ['add-stream-post'],
        {},
      ),
      nastyString,
      fc.constantFrom(...COMMANDS),
    )
    .map((value) => ({ name: 'event=other', apply: (c: Command) => void (c['event'] = value) })),
  fc.constant({ name: 'drop event', apply: (c: Command) => void delete c['event'] }),
  fc
    .oneof(nastyString, fc.constantFrom<unknown>(null, 7, ['r'], {}, 'r'.repeat(256), 'r'.repeat(257), ''))
    .map((value) => ({ name: 'requestId=junk', apply: (c: Command) => void (c['requestId'] = value) })),
);

/** Mutations of the serialized text: broken JSON, duplicate keys, prototype keys, padding, deep nesting. */
const textMutation: fc.Arbitrary<{ name: string; apply: (text: string) => string }> = fc.oneof(
  fc.nat().map((at) => ({ name: 'truncated', apply: (text: string) => text.slice(0, at % text.length) })),
  fc.tuple(fc.nat(), fc.constantFrom('{', '}', '"', ',', ':', '\\', '\u0000', 'x', ']')).map(([at, char]) => ({
    name: `inserted ${JSON.stringify(char)}`,
    apply: (text: string) => text.slice(0, at % text.length) + char + text.slice(at % text.length),
  })),
  fc
    .constantFrom(
      '"event":"unknown-thing"',
      '"event":"add-stream-post"',
      '"data":{}',
      '"requestId":"dup"',
      '"__proto__":{"streamId":"macro-wire","content":"p","contentType":"rawtext"}',
    )
    .map((pair) => ({
      name: `duplicate key ${pair.slice(0, 20)}`,
      apply: (text: string) => (text.startsWith('{') && text.length > 2 ? `{${pair},${text.slice(1)}` : text),
    })),
  fc
    .constantFrom('\ufeff', ' \n\t', '[', '')
    .map((prefix) => ({ name: 'prefixed', apply: (text: string) => prefix + text })),
  fc
    .constantFrom(' ', 'x', '}', ',{}', '\u0000')
    .map((suffix) => ({ name: 'suffixed', apply: (text: string) => text + suffix })),
  fc.integer({ min: 1000, max: 100_000 }).map((depth) => ({
    name: `nested ${depth} deep`,
    apply: (text: string) =>
      text.startsWith('{') && text.length > 2
        ? `{"deep":${'['.repeat(depth)}${']'.repeat(depth)},${text.slice(1)}`
        : text,
  })),
);

function mutatedCase(base: (role: Role) => fc.Arbitrary<Command>, kind: string): fc.Arbitrary<Case> {
  return fc.constantFrom(...ROLES).chain((role) =>
    fc
      .tuple(
        base(role),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        fc.option(textMutation, { freq: 4, nil: undefined }),
      )
      .map(([generated, mutations, onText]) => {
        // Mutated on a copy: fast-check may hand the same generated value out again.
        const command = structuredClone(generated);
        for (const m of mutations) m.apply(command);
        let text = JSON.stringify(command);
        if (onText) text = onText.apply(text);
        const names = [...mutations.map((m) => m.name), ...(onText ? [onText.name] : [])];
        return { role, frame: { kind: 'text' as const, text }, label: `${kind}: ${names.join(', ')}` };
      }),
  );
}

const anyRole = fc.constantFrom(...ROLES);

function caseOf(role: Role, frame: Frame, label: string): Case {
  return { role, frame, label };
}

/** A publish padded past the 1 MiB frame limit, as text or binary. */
function oversized(kind: 'text' | 'binary', extra: number): Frame {
  const content = 'z'.repeat(MiB + extra);
  const text = JSON.stringify({
    event: 'add-stream-post',
    data: { streamId: 'macro-wire', contentType: 'rawtext', content },
  });
  return kind === 'text' ? { kind, text } : { kind, bytes: Buffer.from(text) };
}

const fuzzCase: fc.Arbitrary<Case> = fc
  .oneof(
    {
      arbitrary: fc
        .constantFrom<Role>('macro', 'whale')
        .chain((role) => validPublish(role).map((command) => textCase(role, command, 'valid publish', 'ack'))),
      weight: 15,
    },
    {
      arbitrary: anyRole.chain((role) =>
        validSubscribe(role).map((command) => textCase(role, command, 'valid subscribe', 'sub_ack')),
      ),
      weight: 10,
    },
    { arbitrary: mutatedCase(validPublish, 'mutated publish'), weight: 40 },
    { arbitrary: mutatedCase(validSubscribe, 'mutated subscribe'), weight: 20 },
    {
      arbitrary: fc.tuple(anyRole, fc.jsonValue()).map(([role, value]) => textCase(role, value, 'random JSON value')),
      weight: 10,
    },
    {
      arbitrary: fc
        .tuple(anyRole, fc.constantFrom(...COMMANDS), fc.anything({ maxDepth: 3 }))
        .map(([role, event, data]) => textCase(role, { event, data }, 'command with random data')),
      weight: 10,
    },
    {
      arbitrary: fc
        .tuple(anyRole, fc.string({ unit: 'binary', maxLength: 200 }))
        .map(([role, text]) => caseOf(role, { kind: 'text', text }, 'random text')),
      weight: 10,
    },
    {
      arbitrary: fc
        .tuple(anyRole, fc.uint8Array({ maxLength: 200 }))
        .map(([role, bytes]) => caseOf(role, { kind: 'binary', bytes: Buffer.from(bytes) }, 'random binary frame')),
      weight: 5,
    },
    {
      arbitrary: fc
        .tuple(fc.constantFrom<Role>('macro', 'alice'), validPublish('macro'))
        .map(([role, command]) =>
          caseOf(
            role,
            { kind: 'binary', bytes: Buffer.from(JSON.stringify(command)) },
            'a valid publish as a binary frame',
          ),
        ),
      weight: 5,
    },
    {
      arbitrary: fc
        .tuple(anyRole, fc.uint8Array({ minLength: 1, maxLength: 60 }))
        .map(([role, bytes]) =>
          caseOf(role, { kind: 'text-bytes', bytes: Buffer.from(bytes) }, 'random bytes as a text frame'),
        ),
      weight: 5,
    },
    {
      arbitrary: fc
        .tuple(anyRole, fc.constantFrom('text' as const, 'binary' as const), fc.integer({ min: 1, max: 4096 }))
        .map(([role, kind, extra]) => caseOf(role, oversized(kind, extra), 'a frame over 1 MiB')),
      weight: 1,
    },
  )
  .map(withPrinter);

// --- what the server must answer -------------------------------------------

type View = { binary: true } | { binary: false; json: { ok: true; value: unknown } | { ok: false } };

/** The frame as the server reads it: UTF-8 decoded (lone surrogates were sent as U+FFFD), then parsed. */
function serverView(frame: Frame): View {
  if (frame.kind === 'binary') return { binary: true };
  const text = frame.kind === 'text' ? Buffer.from(frame.text, 'utf8').toString('utf8') : frame.bytes.toString('utf8');
  try {
    return { binary: false, json: { ok: true, value: JSON.parse(text) as unknown } };
  } catch {
    return { binary: false, json: { ok: false } };
  }
}

/** The close code PROTOCOL.md B2 (1009) or RFC 6455 (1007) prescribes for this frame, if any. */
function expectedClose(frame: Frame): number | undefined {
  if (frameBytes(frame) > MiB) return 1009;
  if (frame.kind === 'text-bytes' && !isUtf8(frame.bytes)) return 1007;
  return undefined;
}

function isCommandName(value: unknown): boolean {
  return (COMMANDS as readonly unknown[]).includes(value);
}

const COMMAND_ERRORS = ['invalid-argument', 'not-found', 'forbidden'];

/** Everything wrong with the one reply to a frame (empty when it is right). */
function replyProblems(c: Case, view: View, reply: Record<string, unknown>): string[] {
  const problems = envelopeProblems(reply);
  const event = reply['event'];
  const data = reply['data'] as Record<string, unknown> | undefined;
  const code = event === 'error' ? data?.['code'] : undefined;
  if (event === 'error') problems.push(...errorProblems(reply));
  const want = (expected: string, why: string) => {
    if (code !== expected)
      problems.push(`${why}: expected error ${expected}, got ${String(event)} ${String(code ?? '')}`);
  };
  const noRequestId = () => {
    if ('requestId' in reply)
      problems.push(`reply carries requestId ${JSON.stringify(reply['requestId'])} the frame could not give it`);
  };
  if (view.binary) {
    want('bad-request', 'binary frame');
    noRequestId();
    return problems;
  }
  if (!view.json.ok) {
    want('bad-json', 'not JSON');
    noRequestId();
    return problems;
  }
  const raw = view.json.value;
  if (!isPlainObject(raw)) {
    want('bad-request', 'not an object');
    noRequestId();
    return problems;
  }
  const requestId = raw['requestId'];
  if (requestId !== undefined && typeof requestId !== 'string') {
    want('bad-request', 'requestId not a string');
    noRequestId();
    return problems;
  }
  if (typeof requestId === 'string' && reply['requestId'] !== requestId) {
    // A requestId the server will not carry back must be refused as such, not dropped.
    if (code === 'bad-request' && !('requestId' in reply) && requestId.length > 256) return problems;
    problems.push(
      `requestId ${JSON.stringify(requestId).slice(0, 80)} not echoed (got ${JSON.stringify(reply['requestId'])})`,
    );
  }
  if (requestId === undefined) noRequestId();
  const command = raw['event'];
  if (typeof command !== 'string') {
    want('bad-request', 'event not a string');
    return problems;
  }
  if (!isCommandName(command)) {
    want('unknown-command', 'unknown command');
    return problems;
  }
  if (event === 'error') {
    if (!COMMAND_ERRORS.includes(String(code))) problems.push(`${command} failed with ${String(code)}`);
    if (data && 'command' in data && data['command'] !== command)
      problems.push(`error names command ${String(data['command'])}`);
  } else if (command === 'add-stream-post') {
    if (event !== 'ack') problems.push(`a publish was answered with ${String(event)}`);
    else problems.push(...ackProblems(c.role, raw['data'], data));
  } else if (event !== 'sub_ack') {
    problems.push(`a subscribe was answered with ${String(event)}`);
  } else {
    problems.push(...subAckProblems(c.role, command, raw['data'], data));
  }
  if (c.valid && event !== c.valid) problems.push(`a valid command was refused: ${JSON.stringify(data)}`);
  return problems;
}

function ackProblems(role: Role, args: unknown, data: Record<string, unknown> | undefined): string[] {
  const problems: string[] = [];
  const post = data?.['post'] as Record<string, unknown> | undefined;
  if (!data || Object.keys(data).sort().join() !== 'duplicate,post')
    problems.push(`ack data is ${JSON.stringify(data)}`);
  if (typeof data?.['duplicate'] !== 'boolean') problems.push('ack duplicate is not a boolean');
  problems.push(...postProblems(post, 'ack'));
  if (!isPlainObject(args)) return [...problems, 'acked a publish without arguments'];
  if (ROLE_PUBLISHES[role] === undefined) problems.push(`a ${role} key published`);
  if (post?.['streamId'] !== ROLE_PUBLISHES[role] || args['streamId'] !== post?.['streamId']) {
    problems.push(
      `acked a post on ${String(post?.['streamId'])} for streamId ${JSON.stringify(args['streamId'])} with the ${role} key`,
    );
  }
  if (data?.['duplicate'] === false) {
    if (post?.['text'] !== args['content']) problems.push('the acked text is not the content sent');
    // Omitted (or null), it is rawtext (PROTOCOL.md B4).
    if (post?.['contentType'] !== (args['contentType'] ?? 'rawtext'))
      problems.push('the acked contentType is not the one sent');
    if (post?.['customTarget'] !== (args['customTarget'] ?? null))
      problems.push('the acked customTarget is not the one sent');
  }
  return problems;
}

function subAckProblems(
  role: Role,
  command: string,
  args: unknown,
  data: Record<string, unknown> | undefined,
): string[] {
  const problems: string[] = [];
  if (!data || Object.keys(data).sort().join() !== 'command,history,lastPosts,streamIds')
    return [`sub_ack data is ${JSON.stringify(data)}`];
  const history = data['history'];
  if (typeof history !== 'number' || !Number.isInteger(history) || history < 0)
    problems.push(`sub_ack history ${String(history)}`);
  if (data['command'] !== command) problems.push(`sub_ack for ${String(data['command'])}, sent ${command}`);
  const ids = data['streamIds'];
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => ROLE_STREAMS[role].includes(id as string))) {
    problems.push(`sub_ack streamIds ${JSON.stringify(ids)} are not ${role}'s streams`);
  }
  const lastPosts = data['lastPosts'];
  if (typeof lastPosts !== 'number' || !Number.isInteger(lastPosts) || lastPosts < 0 || lastPosts > 100) {
    problems.push(`sub_ack lastPosts ${String(lastPosts)}`);
  }
  const sent = isPlainObject(args) ? args : {};
  if (Number(sent['lastPosts'] ?? 0) !== lastPosts)
    problems.push(`lastPosts ${JSON.stringify(sent['lastPosts'])} acked as ${String(lastPosts)}`);
  const requested = sent['streamIds'];
  const named =
    typeof requested === 'string' || Array.isArray(requested)
      ? [
          ...new Set(
            (typeof requested === 'string' ? requested.split(',') : (requested as string[]))
              .map((id) => id.trim())
              .filter((id) => id !== ''),
          ),
        ]
      : [];
  const expected = named.length === 0 ? ROLE_STREAMS[role] : named;
  if (JSON.stringify(ids) !== JSON.stringify(expected)) {
    problems.push(`sub_ack streamIds ${JSON.stringify(ids)}, asked for ${JSON.stringify(expected)}`);
  }
  return problems;
}

/** Problems with a message that is not a reply: a post delivery, a tree item or keep-alive. */
function deliveryProblems(message: Record<string, unknown>): string[] {
  const event = message['event'];
  if (event === 'stream.post.created' || event === 'stream.post.released') {
    return [
      ...envelopeProblems(message),
      ...('requestId' in message ? ['a post carries a requestId'] : []),
      ...postProblems(message['data']),
    ];
  }
  if (event === 'keep-alive')
    return JSON.stringify(message) === '{"event":"keep-alive","data":{}}' ? [] : ['malformed keep-alive'];
  if (event === undefined) {
    const ok =
      typeof message['_id'] === 'string' &&
      typeof message['body'] === 'string' &&
      typeof message['time'] === 'number' &&
      message['type'] === 'stream-post' &&
      typeof message['hidden'] === 'boolean';
    return ok ? [] : [`malformed tree item ${JSON.stringify(message).slice(0, 200)}`];
  }
  return [`unexpected event ${String(event)}`];
}

const REPLY_EVENTS = new Set(['ack', 'sub_ack', 'error']);

// --- the run -------------------------------------------------------------------

interface Ledger {
  /** Posts the server acked as newly published, in order. */
  created: { id: string; streamId: string; text: string; hidden: boolean }[];
  ids: Set<string>;
  /** `${streamId}\0${idempotencyKey}` → the post first acked with it. */
  byKey: Map<string, string>;
}

class Fuzzer {
  readonly conns = new Map<Role, WireClient>();
  readonly ledger: Ledger = { created: [], ids: new Set(), byKey: new Map() };
  #sentinel = 0;

  constructor(
    readonly server: StreamPostsServer,
    readonly basePosts: number,
  ) {}

  async conn(role: Role): Promise<WireClient> {
    let client = this.conns.get(role);
    if (!client || client.isClosed) {
      client = await connectWire(this.server, ROLE_KEY[role]);
      this.conns.set(role, client);
    }
    return client;
  }

  /** Sends one case and checks the server's reaction, the ledger and the post count. */
  async run(c: Case): Promise<void> {
    const client = await this.conn(c.role);
    const from = client.received.length;
    if (c.frame.kind === 'text') client.send(c.frame.text);
    else client.send(c.frame.bytes, c.frame.kind === 'binary');

    const closeCode = expectedClose(c.frame);
    if (closeCode !== undefined) {
      const closed = await Promise.race([
        client.closed,
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), WAIT_MS)),
      ]);
      expect(closed?.code, 'close code').toBe(closeCode);
      const replies = client.received.slice(from).filter((r) => REPLY_EVENTS.has(String(r.message?.['event'])));
      expect(replies, 'no reply to a frame that closes the connection').toEqual([]);
    } else {
      // A sentinel after the frame: everything before its reply answers the frame.
      const sentinel = `sentinel-${(this.#sentinel += 1)}`;
      client.send(JSON.stringify({ event: 'fuzz-sentinel', requestId: sentinel }));
      const isSentinelReply = (m: Record<string, unknown>) =>
        m['requestId'] === sentinel && REPLY_EVENTS.has(String(m['event']));
      const end = await client.waitFor(isSentinelReply, `reply to ${sentinel}`, WAIT_MS, from);
      const sentinelReply = client.received[end]!.message!;
      expect([sentinelReply['event'], (sentinelReply['data'] as Record<string, unknown>)['code']]).toEqual([
        'error',
        'unknown-command',
      ]);
      const between = client.received.slice(from, end);
      expect(
        between.filter((r) => r.binary || !r.message).map((r) => r.raw ?? '<binary>'),
        'frames that are not JSON objects',
      ).toEqual([]);
      const replies = between.filter((r) => REPLY_EVENTS.has(String(r.message!['event']))).map((r) => r.message!);
      expect(replies.length, `replies to one frame: ${JSON.stringify(replies).slice(0, 500)}`).toBe(1);
      const reply = replies[0]!;
      const view = serverView(c.frame);
      expect(replyProblems(c, view, reply), JSON.stringify(reply).slice(0, 500)).toEqual([]);
      const others = between.filter((r) => !REPLY_EVENTS.has(String(r.message!['event'])));
      expect(others.flatMap((r) => deliveryProblems(r.message!))).toEqual([]);
      if (reply['event'] === 'ack') this.#record(view, reply);
    }
    expect((await adminState(this.server)).posts, 'posts in the store').toBe(
      this.basePosts + this.ledger.created.length,
    );
  }

  #record(view: View, reply: Record<string, unknown>): void {
    const data = reply['data'] as {
      post: { id: string; streamId: string; text: string; hidden: boolean };
      duplicate: boolean;
    };
    const args =
      !view.binary && view.json.ok && isPlainObject(view.json.value)
        ? (view.json.value['data'] as Record<string, unknown>)
        : {};
    const key =
      typeof args['idempotencyKey'] === 'string' ? `${data.post.streamId}\u0000${args['idempotencyKey']}` : undefined;
    if (data.duplicate) {
      expect(key, 'a duplicate ack for a publish without idempotencyKey').toBeDefined();
      expect(data.post.id, 'a duplicate ack returns the post first published with the key').toBe(
        this.ledger.byKey.get(key!),
      );
      return;
    }
    expect(this.ledger.ids.has(data.post.id), 'a new post with an id already used').toBe(false);
    if (key !== undefined) {
      expect(this.ledger.byKey.get(key), 'a repeated idempotencyKey published again').toBeUndefined();
      this.ledger.byKey.set(key, data.post.id);
    }
    const { id, streamId, text, hidden } = data.post;
    this.ledger.created.push({ id, streamId, text, hidden });
    this.ledger.ids.add(id);
  }
}

describe('fuzzing command frames', () => {
  it(`answers ${RUNS} random and mutated frames once each, well formed, and creates exactly the acked posts`, async () => {
    const server = await startTestServer();
    // The owner of every stream sees every post, custom targets included.
    const watcher = await connectWire(server, KEYS.newsdesk);
    expect((await request(watcher, 'on-stream-post', {}, 'watch')).event).toBe('sub_ack');
    const fuzzer = new Fuzzer(server, (await adminState(server)).posts);

    await fc.assert(
      fc.asyncProperty(fuzzCase, (c) => fuzzer.run(c)),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );

    const { created } = fuzzer.ledger;
    // Enough of each outcome that the run meant something.
    expect(created.length).toBeGreaterThan(RUNS / 20);
    expect(fuzzer.ledger.byKey.size).toBeGreaterThan(0);

    // Still accepting connections; a known-good publish works and is the last thing the watcher sees.
    const publisher = await connectWire(server, KEYS.macroWire);
    const marker = await request(
      publisher,
      'add-stream-post',
      { streamId: 'macro-wire', content: 'marker', contentType: 'rawtext' },
      'marker',
    );
    expect(marker.event).toBe('ack');
    const markerId = (marker['data'] as { post: { id: string } }).post.id;
    await watcher.waitFor(
      (m) => m['event'] === 'stream.post.created' && (m['data'] as { id: string }).id === markerId,
      'the marker',
      WAIT_MS,
    );

    const seen = watcher.received.map((r) => r.message!).filter((m) => m['event'] === 'stream.post.created');
    expect(seen.map((m) => (m['data'] as { id: string }).id)).toEqual([...created.map((post) => post.id), markerId]);
    const released = watcher.received.map((r) => r.message!).filter((m) => m['event'] === 'stream.post.released');
    const hidden = new Set(created.filter((post) => post.hidden).map((post) => post.id));
    const releasedIds = released.map((m) => (m['data'] as { id: string }).id);
    expect(new Set(releasedIds).size).toBe(releasedIds.length);
    for (const id of releasedIds) expect(hidden.has(id)).toBe(true);
    expect((await adminState(server)).posts).toBe(fuzzer.basePosts + created.length + 1);
    expect((await http(server, 'GET', '/healthz')).status).toBe(200);
  }, 120_000);

  it('accepts releaseAt at any ISO 8601 date-time of years 0000-9999: hidden when ahead, shown when past', async () => {
    const server = await startTestServer();
    const publisher = await connectWire(server, KEYS.macroWire);
    const { posts } = await adminState(server);
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.date({
          min: new Date('0000-01-01T00:00:00.000Z'),
          max: new Date('9999-12-31T23:59:59.999Z'),
          noInvalidDate: true,
        }),
        fc.boolean(),
        async (date, withMs) => {
          const iso = date.toISOString();
          const releaseAt = withMs ? iso : `${iso.slice(0, 19)}Z`;
          const at = withMs ? date.getTime() : Math.floor(date.getTime() / 1000) * 1000;
          sent += 1;
          const args = { streamId: 'macro-wire', content: 'dated', contentType: 'rawtext', releaseAt };
          const reply = await request(publisher, 'add-stream-post', args, `d${sent}`);
          expect(reply.event, `releaseAt ${releaseAt}: ${JSON.stringify(reply['data'])}`).toBe('ack');
          const post = (reply['data'] as { post: { releaseAt: string; hidden: boolean } }).post;
          expect(post.releaseAt).toBe(new Date(at).toISOString());
          // A minute either side of now is left out: the clock moves while the command travels.
          if (Math.abs(at - Date.now()) > 60_000) expect(post.hidden).toBe(at > Date.now());
        },
      ),
      { seed: SEED, numRuns: 100 },
    );
    expect((await adminState(server)).posts).toBe(posts + sent);
  });

  it(`survives ${RAW_RUNS} connections that send raw garbage, before or after the handshake`, async () => {
    const server = await startTestServer();
    const { posts } = await adminState(server);
    const garbage = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 300 }).map((bytes) => ({ handshake: false, bytes: Buffer.from(bytes) })),
      fc.uint8Array({ minLength: 1, maxLength: 300 }).map((bytes) => ({ handshake: true, bytes: Buffer.from(bytes) })),
      // A well-formed frame header of any opcode around random (unmasked or masked) payload.
      fc
        .tuple(fc.integer({ min: 0, max: 15 }), fc.uint8Array({ maxLength: 120 }), fc.boolean())
        .map(([opcode, payload, masked]) => {
          const frame = clientFrame(opcode, Buffer.from(payload));
          return {
            handshake: true,
            bytes: masked ? frame : Buffer.concat([Buffer.from([frame[0]!, frame[1]! & 0x7f]), Buffer.from(payload)]),
          };
        }),
    );

    await fc.assert(
      fc.asyncProperty(garbage, async ({ handshake, bytes }) => {
        const socket = await rawConnect(server);
        if (handshake) socket.write(upgradeRequest(server, KEYS.alice));
        socket.write(bytes);
        socket.end();
        const { bytes: received, ended } = await readAll(socket, WAIT_MS);
        // The server ends every such connection once the peer has (half-)closed.
        expect(ended).toBe(true);
        if (!received.subarray(0, 16).toString('latin1').startsWith('HTTP/1.1 101')) return;
        const { frames } = parseServerBytes(received);
        for (const frame of frames) {
          if (frame.opcode === OPCODE.close) {
            if (frame.payload.length >= 2)
              expect([1000, 1001, 1002, 1007, 1009]).toContain(frame.payload.readUInt16BE(0));
            continue;
          }
          expect([OPCODE.text, OPCODE.ping, OPCODE.pong]).toContain(frame.opcode);
          if (frame.opcode !== OPCODE.text) continue;
          const message = JSON.parse(frame.payload.toString('utf8')) as Record<string, unknown>;
          expect(envelopeProblems(message)).toEqual([]);
          if (message['event'] === 'error') expect(errorProblems(message)).toEqual([]);
          else expect(message['event']).toBe('connected');
        }
      }),
      { seed: SEED, numRuns: RAW_RUNS, endOnFailure: true },
    );

    const client = await connectWire(server, KEYS.macroWire);
    const ack = await request(
      client,
      'add-stream-post',
      { streamId: 'macro-wire', content: 'still here', contentType: 'rawtext' },
      'after',
    );
    expect(ack.event).toBe('ack');
    expect((await adminState(server)).posts).toBe(posts + 1);
    expect(client.ws.readyState).toBe(WebSocket.OPEN);
  }, 60_000);
});
