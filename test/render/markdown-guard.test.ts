import { describe, expect, it } from 'vitest';
import { MAX_NESTING, MAX_TABLE_PIPES, markdownRisk } from '../../src/render/markdown-guard.js';

describe('markdownRisk', () => {
  it('ordinary markdown is safe to render', () => {
    expect(
      markdownRisk('# Title\n\n> quoted\n> > twice\n\n- a\n  - b\n\n| a | b |\n|---|---|\n| 1 | 2 |\n'),
    ).toBeUndefined();
  });

  it('blockquotes and lists nested past the limit, written any way', () => {
    const tooDeep = MAX_NESTING + 1;
    for (const text of [
      '>'.repeat(tooDeep),
      '> '.repeat(tooDeep),
      '- '.repeat(tooDeep) + 'x',
      '> - 1. '.repeat(6) + 'x',
      `${' '.repeat(2 * tooDeep)}- x`,
    ]) {
      expect(markdownRisk(text), JSON.stringify(text)).toBe('too deeply nested to render');
    }
    expect(markdownRisk('> '.repeat(MAX_NESTING) + 'x')).toBeUndefined();
  });

  it('inside a fence nothing nests: code may contain any number of `>`', () => {
    expect(markdownRisk(`\`\`\`\n${'>'.repeat(100)}\n\`\`\`\n`)).toBeUndefined();
    expect(markdownRisk(`~~~~\n\`\`\`\n${'>'.repeat(100)}\n~~~~\n${'>'.repeat(100)}`)).toBe(
      'too deeply nested to render',
    );
  });

  it('tables past the pipe limit', () => {
    expect(markdownRisk('|'.repeat(MAX_TABLE_PIPES))).toBeUndefined();
    expect(markdownRisk(`| a |\n|---|\n${'| x |\n'.repeat(MAX_TABLE_PIPES / 2)}`)).toBe(
      'too many table cells to render',
    );
  });
});
