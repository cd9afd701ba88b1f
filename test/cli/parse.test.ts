import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseBytes, parseDuration, parseNonNegativeInteger, parsePort, parseTimeout } from '../../src/cli/parse.js';

describe('parseBytes', () => {
  it.each([
    ['1048576', 1048576],
    ['8MiB', 8 * 1024 * 1024],
    ['8mb', 8 * 1024 * 1024],
    ['8M', 8 * 1024 * 1024],
    ['512KiB', 512 * 1024],
    ['512 kb', 512 * 1024],
    ['1.5GiB', 1.5 * 1024 ** 3],
    ['64B', 64],
  ])('%s is %d bytes', (text, expected) => {
    expect(parseBytes(text)).toBe(expected);
  });

  it.each(['', '0', 'lots', '8 TiB', '-1', '8MiBs'])('rejects %j', (text) => {
    expect(() => parseBytes(text)).toThrow(InvalidArgumentError);
  });
});

describe('parseDuration', () => {
  it.each([
    ['5', 5_000],
    ['1.5', 1_500],
    ['1500ms', 1500],
    ['500ms', 500],
    ['30s', 30_000],
    ['10m', 600_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
  ])('%s is %d ms', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it.each(['soon', '', '-5m', 'm10', '5 parsecs', '1e3'])('rejects %j, naming the accepted forms', (text) => {
    expect(() => parseDuration(text)).toThrow(InvalidArgumentError);
    expect(() => parseDuration(text)).toThrow('a number of seconds (5, 1.5) or a number with a unit: 500ms, 30s');
  });

  it('a timeout takes the same forms and must be above zero', () => {
    expect(parseTimeout('30')).toBe(30_000);
    expect(parseTimeout('300ms')).toBe(300);
    expect(() => parseTimeout('0')).toThrow('above zero');
  });

  it('a timeout fits a timer: 24 days at most (a longer one would fire at once)', () => {
    expect(parseTimeout('24d')).toBe(24 * 24 * 3600 * 1000);
    expect(() => parseTimeout('25d')).toThrow('expected a duration of at most 24d, got "25d"');
  });
});

describe('integers', () => {
  it('accepts ports 0-65535 and rejects others', () => {
    expect(parsePort('0')).toBe(0);
    expect(parsePort('65535')).toBe(65535);
    expect(() => parsePort('65536')).toThrow(InvalidArgumentError);
    expect(() => parsePort('80a')).toThrow(InvalidArgumentError);
    expect(parseNonNegativeInteger('200')).toBe(200);
    expect(() => parseNonNegativeInteger('-1')).toThrow(InvalidArgumentError);
    expect(() => parseNonNegativeInteger('1.5')).toThrow(InvalidArgumentError);
  });
});
