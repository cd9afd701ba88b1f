import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Post } from '../../src/protocol/types.js';
import type { KeyPress } from '../../src/terminal/key-parser.js';
import { TerminalModel } from '../../src/terminal/model.js';
import { THEMES } from '../../src/terminal/theme.js';
import { update, type TerminalEvent } from '../../src/terminal/update.js';
import { View } from '../../src/terminal/view.js';

const WIDTH = 80;
const HEIGHT = 16;
const WORDS = ['alpha', 'beta', 'gamma', 'whale watch'];
const STREAMS = [
  ['macro-wire', 'Macro Wire'],
  ['whale', 'Whale'],
] as const;

/** Keys with the effect each must give in the feed, and without: every one that changes nothing outside. */
const KEYS: [input: string, key: KeyPress][] = [
  ...[...'jkgGnNJK/alh|(w?P+ y1r'].map((input): [string, KeyPress] => [input, {}]),
  ['', { return: true }],
  ['', { escape: true }],
  ['', { pageDown: true }],
  ['', { pageUp: true }],
  ['', { downArrow: true }],
];
const FEED_EFFECTS: Record<string, unknown> = {
  y: { kind: 'copy', what: 'link' },
  '1': { kind: 'open', link: 1 },
  r: { kind: 'reconnect' },
};

const steps = fc.array(
  fc.oneof(
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('post' as const), word: fc.nat(3), stream: fc.nat(1) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('key' as const), at: fc.nat(KEYS.length - 1) }) },
  ),
  { maxLength: 120 },
);

/**
 * What the feed should show, worked out the plain way: every post kept, newest first, those
 * the search matches (case-insensitive, over the stream's name and the text). The search is
 * typed after `/`; a pattern that is not a regular expression keeps the last that was.
 */
class Reference {
  posts: { id: string; searched: string }[] = [];
  search: RegExp | undefined;
  text = '';
  typing = false;
  overlay: 'help' | 'pins' | 'alerts' | undefined;

  /** A key: whether it acted in the feed (no overlay, nothing typed). */
  key(input: string, key: KeyPress): boolean {
    if (this.typing) {
      if (key.return === true) this.typing = false;
      else if (key.escape === true) {
        this.typing = false;
        this.setSearch('');
      } else if (input !== '') this.setSearch(this.text + input);
      return false;
    }
    if (this.overlay !== undefined) {
      // The a screen's own keys keep it open (there are no rules to remove); any other closes an overlay.
      if (!(this.overlay === 'alerts' && (input === 'j' || input === 'k' || key.downArrow === true))) {
        this.overlay = undefined;
      }
      return false;
    }
    if (input === '/') {
      this.typing = true;
      this.setSearch('');
    } else if (key.escape === true) this.setSearch('');
    else if (input === 'a') this.overlay = 'alerts';
    else if (input === '?') this.overlay = 'help';
    else if (input === 'P') this.overlay = 'pins';
    return true;
  }

  setSearch(text: string): void {
    this.text = text;
    if (text === '') this.search = undefined;
    else
      try {
        this.search = new RegExp(text, 'iu');
      } catch {
        // The last good pattern is kept.
      }
  }

  shown(): string[] {
    return this.posts.filter((post) => this.search?.test(post.searched) ?? true).map((post) => post.id);
  }
}

/** The view without colour, on UTC, as a test reads it. */
function plainView(model: TerminalModel): View {
  return new View({
    model,
    service: 'ws://127.0.0.1',
    dialect: () => undefined,
    latency: () => undefined,
    color: false,
    hyperlinks: false,
    utc: true,
    markdown: () => undefined,
    theme: THEMES.dark,
  });
}

describe('update, driven by random events against a reference', () => {
  it('rows, selection and scroll keep their rules whatever the keys and posts', () => {
    fc.assert(
      fc.property(steps, (events) => {
        let next = 0;
        const model = new TerminalModel({ capacity: 500, now: () => 1_767_300_000_000 });
        const reference = new Reference();
        const view = plainView(model);
        const draw = () => update(model, { kind: 'drawn', placed: view.frame(WIDTH, HEIGHT).placed });
        draw();
        for (const step of events) {
          const before = model.selected();
          const beforeIndex = model.selectedIndex();
          const beforeLine = model.list.anchor?.line;
          const listDrawn = model.keys.overlay === undefined;
          let event: TerminalEvent;
          if (step.kind === 'post') {
            next += 1;
            const [streamId, streamName] = STREAMS[step.stream]!;
            const text = `${WORDS[step.word]!} ${next}`;
            const post: Post = {
              id: `p${next}`,
              streamId,
              streamName,
              text,
              contentType: 'rawtext',
              createdAt: new Date(Date.UTC(2026, 0, 1, 12, 0, 0, next)).toISOString(),
              releaseAt: null,
              hidden: false,
              customTarget: null,
            };
            reference.posts.unshift({ id: post.id, searched: `${streamName}\n${text}` });
            event = { kind: 'post', post, history: false };
          } else {
            const [input, key] = KEYS[step.at]!;
            const inFeed = reference.key(input, key);
            event = { kind: 'key', input, key, pageRows: HEIGHT - 4 };
            const { effects } = update(model, event);
            // A key asks for what the bindings say, and only in the feed.
            expect(effects).toEqual(inFeed && FEED_EFFECTS[input] !== undefined ? [FEED_EFFECTS[input]] : []);
          }
          if (event.kind === 'post') expect(update(model, event).effects).toEqual([]);
          draw();

          // The modes are the reference's.
          expect(model.keys.typing).toBe(reference.typing);
          expect(model.keys.overlay).toBe(reference.overlay);
          // The feed shows what the reference shows, unless paused (it holds then).
          if (!model.paused) expect(model.rows().map((entry) => entry.id)).toEqual(reference.shown());
          const rows = model.rows();
          const selected = model.selected();
          expect(selected === undefined).toBe(rows.length === 0);
          expect(model.selectedIndex()).toBeGreaterThanOrEqual(0);
          expect(model.selectedIndex()).toBeLessThan(Math.max(1, rows.length));
          // A post arriving leaves the selection where the user put it (below the top).
          if (step.kind === 'post' && before !== undefined && beforeIndex > 0) expect(selected).toBe(before);
          if (model.keys.overlay === undefined && selected !== undefined) {
            // The selected post is on the screen, on the line it was drawn on as posts arrive.
            const anchor = model.list.anchor!;
            expect(anchor.entry).toBe(selected);
            expect(anchor.line).toBeGreaterThanOrEqual(0);
            expect(anchor.line).toBeLessThan(HEIGHT - 2);
            if (step.kind === 'post' && listDrawn && selected === before && beforeIndex > 0)
              expect(anchor.line).toBe(beforeLine);
          }
        }
      }),
      { seed: 37, numRuns: 300 },
    );
  });
});

describe('ages on the rows', () => {
  it("move on at a tick, all at once: a key's frame between ticks changes only the rows the key moved", () => {
    let clock = Date.UTC(2026, 0, 1, 12, 0, 0);
    const model = new TerminalModel({ capacity: 100, now: () => clock });
    const view = plainView(model);
    // Posts that came 100 ms apart: each row's age turns over at its own moment of the second.
    for (let index = 0; index < 10; index++) {
      const post: Post = {
        id: `a${index}`,
        streamId: 'macro-wire',
        streamName: 'Macro Wire',
        text: `aged post ${index}`,
        contentType: 'rawtext',
        createdAt: new Date(clock - 5_000 + index * 100).toISOString(),
        releaseAt: null,
        hidden: false,
        customTarget: null,
      };
      update(model, { kind: 'post', post, history: false });
    }
    update(model, { kind: 'tick' });
    const draw = () => {
      const frame = view.frame(WIDTH, HEIGHT);
      update(model, { kind: 'drawn', placed: frame.placed });
      return frame.lines;
    };
    const before = draw();
    const ageOf = (lines: string[], text: string) => / (\d+s) /.exec(lines.find((line) => line.includes(text))!)![1];
    expect(ageOf(before, 'aged post 1')).toBe('4s');
    expect(ageOf(before, 'aged post 0')).toBe('5s');
    // Half a second on: five rows' ages turned over, but no tick came.
    clock += 500;
    update(model, { kind: 'key', input: 'j', key: {}, pageRows: HEIGHT - 4 });
    const keyed = draw();
    const changed = keyed.flatMap((line, index) => (line === before[index] ? [] : [line]));
    // The header (its clock) and the two rows the selection left and reached: no age moved.
    expect(changed.filter((line) => line.includes('aged post'))).toHaveLength(2);
    expect(ageOf(keyed, 'aged post 1')).toBe('4s');
    update(model, { kind: 'tick' });
    const ticked = draw();
    // Post 1 came 4.9 s before: 5.4 s old now. Post 9, 4.1 s before: 4.6 s.
    expect(ageOf(ticked, 'aged post 1')).toBe('5s');
    expect(ageOf(ticked, 'aged post 9')).toBe('4s');
  });
});
