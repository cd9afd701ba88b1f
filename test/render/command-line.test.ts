import { describe, expect, it } from 'vitest';
import { commandLines } from '../../src/render/command-line.js';

const URL = 'ws://127.0.0.1:8787';
const WORDS = [
  'STREAM_POSTS_API_KEY=sp_demo_reader_bob',
  'node /home/someone/src/stream-posts/bin/stream-posts.js',
  'listen',
  '--url',
  URL,
];

/** The lines pasted into a shell: each ` \` and the newline after it joins two lines. */
const pasted = (text: string) => text.replace(/ \\\n\s*/g, ' ').trim();

describe('commandLines', () => {
  it('breaks only between words, within the width, each line going on with " \\"', () => {
    for (const width of [120, 100, 80, 60, 40, 20]) {
      const text = commandLines(WORDS, '        ', width);
      const lines = text.split('\n');
      expect(pasted(text)).toBe(WORDS.join(' '));
      // The URL is never cut in two; a line is wider than the terminal only when one word is.
      expect(lines.filter((line) => line.includes(URL))).toHaveLength(1);
      for (const line of lines)
        if (line.length > width) expect(WORDS.some((word) => line.trim().replace(/ \\$/, '') === word)).toBe(true);
      for (const line of lines.slice(0, -1)) expect(line.endsWith(' \\')).toBe(true);
    }
  });

  it('is one line where there is no width (not a terminal) or room enough', () => {
    expect(commandLines(WORDS, '  ', undefined)).toBe(`  ${WORDS.join(' ')}`);
    expect(commandLines(WORDS, '  ', 200)).toBe(`  ${WORDS.join(' ')}`);
  });
});
