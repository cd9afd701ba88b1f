import { describe, expect, it } from 'vitest';
import { jsonLine } from '../../src/render/json.js';

describe('jsonLine', () => {
  it('escapes C1 controls, line separators, bidi and zero-width characters; parsing gives the same value', () => {
    const value = {
      text: 'a\u009B2J\u0085\u2028\u2029\u202Eevil\u2066\u200B\uFEFF\u061C b\n\u001B]0;x\u0007',
      'k\u0090': [1, 'é ü 漢 😀'],
    };
    const line = jsonLine(value);
    expect(line).not.toMatch(/[\u0000-\u001F\u007F-\u009F\u061C\u200B-\u200F\u2028-\u202E\u2060\u2066-\u2069\uFEFF]/);
    expect(line).toContain('\\u009b2J');
    expect(line).toContain('\\u202eevil');
    expect(JSON.parse(line)).toEqual(value);
  });
});
