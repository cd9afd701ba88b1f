import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { isPromptCancelled, promptForPost, type PostAnswers, type PromptOptions } from '../../src/render/prompts.js';
import { until } from '../support/poll.js';

const ENTER = '\r';
const DOWN = '\u001B[B';
const CTRL_C = '\u0003';

/**
 * Runs the prompts, typing each key once the screen has changed since the previous
 * key and then stayed still: a key typed between two prompts would be lost.
 */
async function answer(known: Partial<PostAnswers>, keys: string[], options: Partial<PromptOptions> = {}) {
  const input = new PassThrough();
  // inquirer pipes each prompt into the output, which ends it unless it is process.stdout or stderr.
  const output: PassThrough = Object.assign(new PassThrough(), { end: () => output });
  let screen = '';
  output.on('data', (chunk: Buffer) => (screen += chunk.toString()));
  const settled = promptForPost(known, {
    streams: [],
    checkReleaseAt: (value) => (value.startsWith('2030') ? true : 'expected an ISO 8601 date-time'),
    resolveReleaseAt: (value) => new Date(value).toISOString(),
    describeReleaseAt: (iso) => `${iso.slice(0, 16).replace('T', ' ')} UTC`,
    ...options,
    input,
    output,
  }).then(
    (result) => ({ result, error: undefined }),
    (error: unknown) => ({ result: undefined, error }),
  );
  const pause = () => new Promise((resolve) => setTimeout(resolve, 25));
  let seen = 0;
  for (const key of keys) {
    await until(() => screen.length !== seen, 'the screen to change');
    // Still for 25 ms: the prompt has finished drawing (nothing to wait on says so).
    do {
      seen = screen.length;
      await pause();
    } while (screen.length !== seen);
    input.write(key);
  }
  return { ...(await settled), screen };
}

describe('promptForPost', () => {
  it('types the stream id (never a list to pick from), then content, type, release time, confirmation', async () => {
    const streams = [
      { id: 'legal', name: 'Crypto Legal Updates' },
      { id: 'macro', name: 'Macro' },
    ];
    const { result, screen } = await answer(
      {},
      ['macro', ENTER, 'rates held', ENTER, DOWN, ENTER, '2030-01-01T00:00:00Z', ENTER, ENTER],
      { streams },
    );
    expect(result).toEqual({
      streamId: 'macro',
      content: 'rates held',
      contentType: 'markdown',
      releaseAt: '2030-01-01T00:00:00.000Z',
      customTarget: null,
    });
    expect(screen).not.toContain('Crypto Legal Updates');
    expect(screen).toContain('Publish to Macro (macro), hidden until 2030-01-01 00:00 UTC?');
  });

  it('a typed stream id must be one the protocol accepts', async () => {
    const { result, screen } = await answer({ content: 'x', contentType: 'rawtext', releaseAt: null }, [
      'not a stream',
      ENTER,
      '\u0015',
      'macro',
      ENTER,
      ENTER,
    ]);
    expect(screen).toContain('a stream id is 1-64 letters, digits, "_" or "-"');
    expect(result?.streamId).toBe('macro');
  });

  it('an empty release time means none; a known content type is not asked for', async () => {
    const { result, screen } = await answer({ contentType: 'markdown' }, [
      'alice-stream',
      ENTER,
      'hello',
      ENTER,
      ENTER,
      ENTER,
    ]);
    expect(result).toEqual({
      streamId: 'alice-stream',
      content: 'hello',
      contentType: 'markdown',
      releaseAt: null,
      customTarget: null,
    });
    expect(screen).not.toContain('Content type');
    expect(screen).toContain('Publish to alice-stream?');
  });

  it('asks only for what is missing; the type is not asked for given content', async () => {
    const { result, screen } = await answer(
      { streamId: 's', content: 'from a flag', contentType: 'rawtext', releaseAt: null },
      [ENTER],
    );
    expect(result).toEqual({
      streamId: 's',
      content: 'from a flag',
      contentType: 'rawtext',
      releaseAt: null,
      customTarget: null,
    });
    expect(screen).not.toContain('Content');
    expect(screen).not.toContain('Release at');
  });

  it('on a custom stream, asks who receives the post; the confirmation shows the target and the release time resolved', async () => {
    const streams = [{ id: 'whales', name: 'Whale Alerts', customTargets: ['BTC', 'ETH'] }];
    const { result, screen } = await answer(
      { streamId: 'whales', content: 'x', contentType: 'rawtext' },
      ['2030-01-01T00:00:00Z', ENTER, DOWN, ENTER, ENTER],
      {
        streams,
        describeReleaseAt: () => 'New Year 2030',
      },
    );
    expect(result).toEqual({
      streamId: 'whales',
      content: 'x',
      contentType: 'rawtext',
      releaseAt: '2030-01-01T00:00:00.000Z',
      customTarget: 'ETH',
    });
    expect(screen).toContain('Publish to Whale Alerts (whales) → ETH, hidden until New Year 2030?');
  });

  it('shows the validator message for a refused release time, and gives it the trimmed text', async () => {
    const validated: string[] = [];
    const checkReleaseAt = (value: string) => {
      validated.push(value);
      return 'expected an ISO 8601 date-time';
    };
    // Ctrl-C ends a prompt that would otherwise wait for a valid answer.
    const { error, screen } = await answer(
      { streamId: 's', content: 'x', contentType: 'rawtext' },
      [' tomorrow ', ENTER, CTRL_C],
      { checkReleaseAt },
    );
    expect(validated).toEqual(['tomorrow']);
    expect(screen).toContain('expected an ISO 8601 date-time');
    expect(isPromptCancelled(error)).toBe(true);
  });

  it('stream names, ids and targets from the service are shown sanitized and sent as they are', async () => {
    const hostile = (word: string) => `${word}\u001B]0;PWNED\u0007\u009B2J\u202E\u200B`;
    const streams = [{ id: 'whales', name: hostile('Whale Alerts'), customTargets: [hostile('BTC')] }];
    const { result, screen } = await answer(
      { streamId: 'whales', content: 'x', contentType: 'rawtext', releaseAt: null },
      [ENTER, ENTER],
      { streams },
    );
    expect(result).toEqual({
      streamId: 'whales',
      content: 'x',
      contentType: 'rawtext',
      releaseAt: null,
      customTarget: hostile('BTC'),
    });
    expect(screen).toContain('Publish to Whale Alerts ]0;PWNED 2J (whales) → BTC ]0;PWNED 2J?');
    expect(screen).not.toMatch(/\u001B\]0|[\u0007\u009B\u202E\u200B]/);
  });

  it('returns undefined when the user declines', async () => {
    const { result, error } = await answer({ streamId: 's', content: 'x', contentType: 'rawtext', releaseAt: null }, [
      'n',
      ENTER,
    ]);
    expect(error).toBeUndefined();
    expect(result).toBeUndefined();
  });

  it('rejects with a cancellation on Ctrl-C', async () => {
    const { error } = await answer({ streamId: 's', releaseAt: null, contentType: 'rawtext' }, [CTRL_C]);
    expect(isPromptCancelled(error)).toBe(true);
    expect(isPromptCancelled(new Error('other'))).toBe(false);
  });
});
