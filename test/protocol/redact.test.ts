import { describe, expect, it } from 'vitest';
import { redactUrl, secretScrubber } from '../../src/protocol/redact.js';
import { codePoint, UNSAFE_CHARACTERS } from '../support/unsafe-characters.js';

const KEY = 'sp_demo_reader_alice';
const OTHER = 'sp_demo_reader_alice_longer';
const TOKEN = 'tok%41en-with-percent';

/** Every byte of `text` percent-encoded, hex digits in upper or lower case. */
function encodeAll(text: string, upper: boolean): string {
  const hex = [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
  return upper ? hex.toUpperCase() : hex;
}

describe('secretScrubber', () => {
  const scrub = secretScrubber([KEY, OTHER, TOKEN], '[key]');

  it.each([
    ['as written', KEY],
    ['one character percent-encoded', 'sp%5Fdemo_reader_alice'],
    ['lower-case hex', 'sp%5fdemo%5freader%5Falice'],
    ['every byte encoded, upper case', encodeAll(KEY, true)],
    ['every byte encoded, lower case', encodeAll(KEY, false)],
    ['encoded twice', 'sp%255Fdemo%255freader_alice'],
    ['encoded three times', 'sp%25255Fdemo_reader_alice'],
    ['as a JSON \\u escape', 'sp\\u005Fdemo_reader_alice'],
  ])('replaces a key %s, and only the key', (_name, form) => {
    const text = `/v1/ws/${form}/x?a=1`;
    expect(scrub(text)).toBe('/v1/ws/[key]/x?a=1');
  });

  it('hides the longest key that matches, escaped or not', () => {
    expect(scrub(`a ${OTHER} b`)).toBe('a [key] b');
    expect(scrub(`a ${OTHER.replaceAll('_', '%5F')} b`)).toBe('a [key] b');
  });

  it('finds a secret that holds a percent sign as written, and encoded', () => {
    expect(scrub(`t=${TOKEN};`)).toBe('t=[key];');
    expect(scrub(`t=${encodeURIComponent(TOKEN)};`)).toBe('t=[key];');
  });

  it('leaves text without a secret as it is, escapes included', () => {
    for (const text of ['/v1/ws/sp%5Fdemo_reader_bob', 'plain', '%zz%5', '\\u00', `${KEY.slice(0, -1)}%`])
      expect(scrub(text)).toBe(text);
  });

  it('several secrets in one text, next to each other', () => {
    expect(scrub(`${KEY}${encodeAll(KEY, true)}-${KEY}`)).toBe('[key][key]-[key]');
  });
});

describe('secretScrubber, a key split by what a reader does not see', () => {
  const scrub = secretScrubber([KEY], '[key]');
  it.each(UNSAFE_CHARACTERS.map((char) => [codePoint(char), char]))(
    '%s inside the key, once or several times',
    (_name, char) => {
      expect(scrub(`a ${KEY.slice(0, 5)}${char}${KEY.slice(5)} b`)).toBe('a [key] b');
      expect(scrub(`a ${[...KEY].join(char)} b`)).toBe('a [key] b');
    },
  );

  it('across line breaks and tabs, and escaped forms of them', () => {
    expect(scrub(`x${KEY.slice(0, 3)}\r\n\t${KEY.slice(3)}y`)).toBe('x[key]y');
    expect(scrub(`x${KEY.slice(0, 3)}\\u200b${KEY.slice(3)}y`)).toBe('x[key]y');
    expect(scrub(`x${KEY.slice(0, 3)}\\n${KEY.slice(3, 9)}\\t${KEY.slice(9)}y`)).toBe('x[key]y');
    expect(scrub(`x${KEY.slice(0, 3)}%E2%80%8B${KEY.slice(3).replace('_', '%5F')}y`)).toBe('x[key]y');
  });

  it('leaves alone what only looks like the key once something else is taken out', () => {
    for (const text of [`${KEY.slice(0, 5)}x${KEY.slice(5)}`, `${KEY.slice(0, 5)}\u0007`, `a b c`])
      expect(scrub(text)).toBe(text);
  });
});

describe('redactUrl', () => {
  it.each([
    ['/v1/ws?apiKey=secret&x=1', '/v1/ws?apiKey=[redacted]&x=1'],
    ['/v1/ws?x=1&api_key=secret', '/v1/ws?x=1&api_key=[redacted]'],
    ['/v1/ws?KEY=secret', '/v1/ws?KEY=[redacted]'],
    ['/v1/ws?api%4Bey=secret', '/v1/ws?api%4Bey=[redacted]'],
    ['/v1/ws?%61pi%6bey=secret#frag', '/v1/ws?%61pi%6bey=[redacted]#frag'],
    ['/v1/ws?api%254Bey=secret', '/v1/ws?api%254Bey=[redacted]'],
    ['/v1/ws?lastPosts=5&format=tree', '/v1/ws?lastPosts=5&format=tree'],
  ])('%s', (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
  });
});
