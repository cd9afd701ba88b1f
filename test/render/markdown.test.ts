import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadMarkdownRenderer } from '../../src/render/markdown.js';

const ESC = /\u001B/;
// Colours and our hyperlinks are allowed; no other control character is.
const STYLING = /\u001B\[[0-9;]*m|\u001B\]8;[^\u0000-\u001F]*\u0007/g;
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/;
const sample = [
  '# Ruling',
  '',
  'The **court** dismissed it; read [the order](https://example.org/order) or https://example.org/raw.',
  '',
  '- first **point**',
  '- second',
  '',
  '```js',
  'const x = 1;',
  '```',
  '',
  '| a | b |',
  '|---|---|',
  '| 1 | 2 |',
  '',
  '---',
  '',
].join('\n');

describe('loadMarkdownRenderer', () => {
  it('without colour: readable text, links as "text (url)", and no escape sequence at all', async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 100 });
    const text = render(sample);
    expect(text).not.toMatch(ESC);
    expect(text.split('\n')[0]).toBe('Ruling');
    expect(text).toContain(
      'The court dismissed it; read the order (https://example.org/order) or https://example.org/raw.',
    );
    expect(text).toContain('* first point\n  * second');
    expect(text).toContain('const x = 1;');
    expect(text).toContain('│ 1 │ 2 │');
    expect(text.endsWith('-'.repeat(100))).toBe(true);
  });

  it("a width given with a text replaces the loader's for that text only; a bad one is a RangeError", async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 100 });
    const paragraph = Array.from({ length: 30 }, (_, index) => `word${index}`).join(' ');
    const text = `${paragraph}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n---\n`;
    const widest = (rendered: string) => Math.max(...rendered.split('\n').map((line) => line.length));
    const narrow = render(text, 40);
    expect(widest(narrow)).toBe(40);
    expect(narrow.endsWith('-'.repeat(40))).toBe(true);
    expect(narrow.split(/\s+/).filter((word) => word.startsWith('word'))).toHaveLength(30);
    const wide = render(text);
    expect(wide.endsWith('-'.repeat(100))).toBe(true);
    expect(widest(wide)).toBe(100);
    expect(() => render(text, 0)).toThrow(RangeError);
  });

  it('with colour: bold and links styled, link text and URL both visible', async () => {
    const render = await loadMarkdownRenderer({ color: true, width: 100 });
    const text = render(sample);
    expect(text).toContain('\u001B[1mcourt\u001B[22m');
    expect(text).toContain('\u001B[1mpoint\u001B[22m');
    expect(text).toContain(
      '\u001B[34mthe order\u001B[39m (\u001B[34m\u001B[4mhttps://example.org/order\u001B[24m\u001B[39m)',
    );
    expect(text).not.toContain('\u001B]8;;');
  });

  it('with colour and hyperlinks: links are OSC 8 hyperlinks showing their text', async () => {
    const render = await loadMarkdownRenderer({ color: true, width: 40, hyperlinks: true });
    const text = render('[the order](https://example.org/order)');
    expect(text).toBe(
      '\u001B]8;;https://example.org/order\u0007\u001B[34m\u001B[4mthe order\u001B[24m\u001B[39m\u001B]8;;\u0007',
    );
  });

  it('hyperlinks are never used without colour', async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 40, hyperlinks: true });
    expect(render('[the order](https://example.org/order)')).toBe('the order (https://example.org/order)');
  });

  it('drops trailing blank lines', async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 40 });
    expect(render('one\n\ntwo\n\n\n')).toBe('one\n\ntwo');
  });

  it('escape sequences in the markdown do not reach the terminal', async () => {
    const render = await loadMarkdownRenderer({ color: true, width: 40 });
    expect(render('a \u001B[2J b [x](https://e.org/\u0007\u001B]8;;y)')).not.toMatch(/\u001B\[2J|\u0007\u001B\]8;;y/);
  });

  it('a link whose text is another address shows its real target, as a hyperlink too', async () => {
    const render = await loadMarkdownRenderer({ color: true, width: 100, hyperlinks: true });
    for (const forged of ['[https://good.example](https://evil.example/x)', '[good.example](https://evil.example/x)']) {
      expect(stripVTControlCharacters(render(forged))).toMatch(/good\.example \(https:\/\/evil\.example\/x\)/);
    }
    // The text is the target: shown once.
    expect(stripVTControlCharacters(render('[https://a.example](https://a.example/)'))).toBe('https://a.example');
    expect(stripVTControlCharacters(render('<https://a.example/x>'))).toBe('https://a.example/x');
  });

  it('entities that decode to control characters do not reach the terminal', async () => {
    const render = await loadMarkdownRenderer({ color: true, width: 40, hyperlinks: true });
    const text = render('a &#x1b;]0;PWNED&#x07; &#27;[2J &#155;2J `&#x1b;` | t |\n|---|\n| &#x1b;]52;c;QQ== |');
    expect(text.replace(STYLING, '')).not.toMatch(CONTROL);
  });

  it('2,000 nested blockquotes: plain text under a note, no stack overflow', async () => {
    const render = await loadMarkdownRenderer({ color: true, width: 5000 });
    const text = render(`${'>'.repeat(2000)} deep`);
    expect(stripVTControlCharacters(text)).toBe(
      `(shown as plain text: too deeply nested to render)\n${'>'.repeat(2000)} deep`,
    );
  });

  it('nested quotes within the limit still render, each level indented', async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 40 });
    expect(render('> outer\n>\n> > inner')).toBe('  outer\n  \n    inner');
  });

  it('past its time budget a text is shown as plain text under a note', async () => {
    let clock = 0;
    // Every reading of the clock moves it on 1 ms: rendering is measured in steps, not real time.
    const render = await loadMarkdownRenderer({ color: true, width: 5000, budgetMs: 50, now: () => clock++ });
    const slow = '*a _'.repeat(500);
    expect(stripVTControlCharacters(render(slow))).toBe(`(shown as plain text: too slow to render)\n${slow}`);
    expect(stripVTControlCharacters(render('**short**'))).toBe('short');
  });

  it('refuses a budget that is not positive', async () => {
    await expect(loadMarkdownRenderer({ color: false, width: 10, budgetMs: 0 })).rejects.toThrow(RangeError);
  });

  it('refuses a width that is not a positive integer', async () => {
    await expect(loadMarkdownRenderer({ color: false, width: 0 })).rejects.toThrow(RangeError);
  });
});

describe('loadMarkdownRenderer: fitting the terminal', () => {
  const lines = (text: string) => stripVTControlCharacters(text).split('\n');
  const widest = (text: string) => Math.max(...lines(text).map((line) => line.length));

  it('headings show their text, not their `#`', async () => {
    for (const color of [false, true]) {
      const render = await loadMarkdownRenderer({ color, width: 80 });
      expect(lines(render('# Ruling\n\n## Next steps\n\nbody'))).toEqual(['Ruling', '', 'Next steps', '', 'body']);
    }
  });

  it('long paragraphs, quotes and list items wrap at word boundaries, each under its own indent', async () => {
    const render = await loadMarkdownRenderer({ color: true, width: 30 });
    const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima';
    const text = render(`${words}\n\n> ${words}\n\n- ${words}`);
    expect(widest(text)).toBeLessThanOrEqual(30);
    // No word is cut: every word of every line is one of the words written.
    const written = new Set(words.split(' '));
    for (const line of lines(text))
      for (const word of line.trim().split(/\s+/)) if (word !== '' && word !== '*') expect(written).toContain(word);
    const [paragraph, quote, list] = stripVTControlCharacters(text).split('\n\n');
    expect(paragraph!.split('\n').every((line) => !line.startsWith(' '))).toBe(true);
    expect(quote!.split('\n').every((line) => line.startsWith('  ') && !line.startsWith('   '))).toBe(true);
    expect(
      list!
        .split('\n')
        .slice(1)
        .every((line) => line.startsWith('    ')),
    ).toBe(true);
  });

  it('a word longer than the line stays whole (an address is not cut in two)', async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 20 });
    const url = 'https://example.org/a/rather/long/path';
    expect(lines(render(`see ${url} now`))).toEqual(['see', url, 'now']);
  });

  it('table columns keep their alignment: right-aligned cells end at the column edge', async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 80 });
    const text = render('| coin | price |\n|:--|--:|\n| BTC | 1 |\n| ETH | 1000 |');
    expect(text).toContain('│ BTC  │     1 │');
    expect(text).toContain('│ ETH  │  1000 │');
    expect(text).toContain('│ coin │ price │');
  });

  it('a table wider than the terminal becomes one record per block, every cell under its column name', async () => {
    const head = ['symbol', 'exchange', 'price', 'change', 'volume', 'market cap', 'updated'];
    const row = ['BTC', 'Binance', '97,000.00', '+2.5%', '1,234,567,890', '1,900,000,000,000', '2026-11-21 12:00'];
    const other = ['ETH', 'Coinbase', '3,400.00', '-1.0%', '987,654,321', '410,000,000,000', '2026-11-21 12:01'];
    const table = [head, head.map(() => '---'), row, other].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
    for (const color of [false, true]) {
      const render = await loadMarkdownRenderer({ color, width: 70 });
      const text = render(table);
      expect(widest(text)).toBeLessThanOrEqual(70);
      expect(text).not.toContain('│');
      expect(stripVTControlCharacters(text).split('\n\n')).toEqual([
        head.map((name, column) => `${name}: ${row[column]}`).join('\n'),
        head.map((name, column) => `${name}: ${other[column]}`).join('\n'),
      ]);
    }
    // The same table on a wide terminal is a box.
    const wide = await loadMarkdownRenderer({ color: false, width: 200 });
    expect(wide(table)).toContain('│ BTC    │ Binance  │');
  });
  it('never re-wraps a code block: each line as written, a line too long cut at the width with a marker', async () => {
    const code = [
      'const answer = computeSomething(alpha, beta, gamma, delta, epsilon);',
      'if (x) {',
      '    return 1;',
      '}',
    ];
    const markdown = `Prose that is long enough to be wrapped at forty columns, between words.\n\n\`\`\`js\n${code.join('\n')}\n\`\`\`\n\n- item\n\n  \`\`\`\n  inside a list item, a code line longer than the rest\n  \`\`\`\n`;
    for (const color of [false, true]) {
      const render = await loadMarkdownRenderer({ color, width: 40 });
      const lines = stripVTControlCharacters(render(markdown)).split('\n');
      // Prose still wraps; nothing is wider than the terminal.
      expect(lines.slice(0, 2)).toEqual([
        'Prose that is long enough to be wrapped',
        'at forty columns, between words.',
      ]);
      for (const line of lines) expect(line.length).toBeLessThanOrEqual(40);
      // Each code line is one line: the long one cut, the others as written.
      const first = lines.find((line) => line.includes('const answer'))!;
      expect(first.endsWith('…')).toBe(true);
      expect(first.length).toBe(40);
      expect(code[0]!.startsWith(first.trim().slice(0, -1))).toBe(true);
      expect(lines).not.toContain(expect.stringMatching(/^\s*beta, gamma/));
      for (const line of code.slice(1))
        expect(lines.some((shown) => shown.endsWith(line) && shown.startsWith(' '))).toBe(true);
      const nested = lines.find((line) => line.includes('inside a list item'))!;
      expect([nested.endsWith('…'), nested.length]).toEqual([true, 40]);
      expect(lines.some((line) => line.includes('longer than the rest'))).toBe(false);
    }
  });

  it('a tab in code is spaces to the next stop of 4, so the cut falls within the width', async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 30 });
    const lines = render('```go\nfunc main() {\n\tfmt.Println("hello, world and more")\n\t\tx\n}\n```').split('\n');
    expect(lines).toContain('      fmt.Println("hello, wor…');
    expect(lines).toContain('          x');
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(30);
  });

  it('a post cannot pass for code: the mark of a code line is taken out of its text', async () => {
    const render = await loadMarkdownRenderer({ color: false, width: 20 });
    const text = render('\uFDD0a paragraph long enough to wrap at twenty columns');
    expect(text).not.toContain('…');
    expect(text).not.toContain('\uFDD0');
    expect(text.split('\n').length).toBeGreaterThan(1);
  });
});
