import { describe, expect, it } from 'vitest';
import { onlyStyling } from '../../src/render/escapes.js';
import { hyperlink } from '../../src/render/hyperlinks.js';

describe('onlyStyling', () => {
  it('keeps colours and hyperlinks as they are', () => {
    const styled = `\u001B[1;34mbold blue\u001B[0m ${hyperlink('https://a.example/x', '\u001B[4mlink\u001B[24m')}\n\ttab`;
    expect(onlyStyling(styled)).toBe(styled);
  });

  it('drops every other control character, leaving the visible rest', () => {
    expect(onlyStyling('a\u001B]0;title\u0007b')).toBe('a]0;titleb');
    expect(onlyStyling('\u001B]52;c;QUFB\u0007\u001B[2J\u001B[H\u009B2J\u0008\u007Fx')).toBe(']52;c;QUFB[2J[H2Jx');
    // A hyperlink whose target hides another sequence is not a hyperlink.
    expect(onlyStyling('\u001B]8;;https://a\u001B]0;x\u0007t')).toBe(']8;;https://a]0;xt');
  });
});
