import { describe, expect, it, vi } from 'vitest';
import type * as MarkedTerminal from 'marked-terminal';
import { loadMarkdownRenderer } from '../../src/render/markdown.js';

/*
 * marked-terminal strips control characters itself wherever it writes text, so with it in
 * place our own filter (render/escapes.ts) is never the one that stops an escape. Here it
 * is the real marked-terminal with that stripping taken out of the way: every control
 * character reaches it as a private-use stand-in, which it keeps, and is put back in what
 * it returns. Whatever escapes then reach the output, only our filter is left to remove.
 */
const CONTROLS = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;
const STAND_INS = /[\uF000-\uF09F]/g;
const hide = (value: unknown): unknown => {
  if (typeof value === 'string') return value.replace(CONTROLS, (c) => String.fromCharCode(0xf000 + c.charCodeAt(0)));
  if (Array.isArray(value)) return value.map(hide);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([name, field]) => [name, hide(field)]));
  }
  return value;
};
const putBack = (value: unknown): unknown =>
  typeof value === 'string' ? value.replace(STAND_INS, (c) => String.fromCharCode(c.charCodeAt(0) - 0xf000)) : value;

vi.mock('marked-terminal', async (importOriginal) => {
  const real = await importOriginal<typeof MarkedTerminal>();
  return {
    ...real,
    markedTerminal: (...options: Parameters<typeof real.markedTerminal>) => {
      const extension = real.markedTerminal(...options) as {
        renderer: Record<string, (...args: unknown[]) => unknown>;
      };
      // Nested calls (a heading's inline text) keep the stand-ins: the outermost puts them back.
      let depth = 0;
      for (const [name, render] of Object.entries(extension.renderer)) {
        extension.renderer[name] = function (this: unknown, ...args: unknown[]) {
          depth += 1;
          try {
            const out = render.apply(this, args.map(hide));
            return depth === 1 ? putBack(out) : out;
          } finally {
            depth -= 1;
          }
        };
      }
      return extension;
    },
  };
});

// Colours and our hyperlinks are allowed; no other control character is.
const STYLING = /\u001B\[[0-9;]*m|\u001B\]8;[^\u0000-\u001F]*\u0007/g;
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/;

/** Entities marked decodes into a title change, a clipboard write, a screen clear, C1 CSI, BEL and backspace. */
const TITLE = '&#x1b;]0;PWNED&#x07;';
const ATTACKS = `${TITLE} &#27;]52;c;QUFB&#7; &#x1B;[2J &#155;2J &#8;&#x7f;`;

const POSITIONS: Record<string, string> = {
  paragraph: `text ${ATTACKS} text`,
  heading: `# ${ATTACKS}`,
  'second-level heading': `## ${ATTACKS}`,
  emphasis: `**${ATTACKS}** _${TITLE}_ ~~${TITLE}~~`,
  'link text': `[${ATTACKS}](https://example.org/a)`,
  'link address': `[x](https://example.org/${TITLE})`,
  'link title': `[x](https://example.org/a "${TITLE}")`,
  'image text': `![${ATTACKS}](https://example.org/i.png)`,
  table: `| ${ATTACKS} | b |\n|---|---|\n| ${TITLE} | **${TITLE}** |`,
  list: `- ${ATTACKS}\n  1. ${TITLE}`,
  quote: `> ${ATTACKS}\n> > ${TITLE}`,
  html: `<span title="${TITLE}">${ATTACKS}</span>`,
};

describe('terminal escapes in markdown, with marked-terminal letting them through', () => {
  it('the stand-in really lets them through marked-terminal', async () => {
    const [{ Marked }, { markedTerminal }] = await Promise.all([import('marked'), import('marked-terminal')]);
    const rendered = new Marked(markedTerminal({})).parse(`# ${TITLE}\n\ntext ${TITLE}`, { async: false });
    expect(rendered).toContain('\u001B]0;PWNED\u0007');
  });

  // Without colour, whole sequences go first (node:util's stripVTControlCharacters), their text with them.
  it.each([
    ['colour and hyperlinks', { color: true, hyperlinks: true }, 'text ]0;PWNED ]52;c;QUFB [2J 2J  text'],
    ['colour', { color: true, hyperlinks: false }, 'text ]0;PWNED ]52;c;QUFB [2J 2J  text'],
    ['no colour', { color: false, hyperlinks: false }, 'text      text'],
  ])('%s: only styling reaches the terminal, from every position', async (_name, options, paragraph) => {
    const render = await loadMarkdownRenderer({ ...options, width: 60 });
    const shown = Object.entries(POSITIONS).map(([position, markdown]) => [position, render(markdown)] as const);
    expect(shown.filter(([, text]) => CONTROL.test(text.replace(STYLING, ''))).map(([position]) => position)).toEqual(
      [],
    );
    // Rendered as markdown, not set aside as plain text by the guard that comes before.
    expect(shown.filter(([, text]) => text.includes('(shown as plain text'))).toEqual([]);
    // What is left of an escape is its printable text, where it was.
    expect(render(POSITIONS['paragraph']!)).toBe(paragraph);
  });
});
