import * as z from 'zod/mini';
import { parseIsoDateTime } from '../../protocol/dates.js';
import { CONTENT_TYPES } from '../../protocol/types.js';
import { ScenarioError } from './scenario.js';

/** What `listen --json` prints for a post: the protocol's frame. */
const recordedSchema = z.object({
  event: z.enum(['stream.post.created', 'stream.post.released']),
  data: z.object({
    id: z.string(),
    streamId: z.string(),
    text: z.nullable(z.string()),
    contentType: z.enum(CONTENT_TYPES),
    createdAt: z.string(),
    releaseAt: z.nullable(z.string()),
    hidden: z.boolean(),
    customTarget: z.optional(z.nullable(z.string())),
  }),
});

type Recorded = z.output<typeof recordedSchema> & { line: number; time: number };

/** The text a hidden post is published with when its release (and so its text) was not recorded. */
export const UNRECORDED_TEXT = '(hidden when recorded; its text was not recorded)';

export interface Conversion {
  steps: Record<string, unknown>[];
  /** Things the scenario cannot reproduce exactly, for the user to know. */
  warnings: string[];
}

function timeOf(text: string | null, line: number, field: string): number {
  const time = text === null ? undefined : parseIsoDateTime(text);
  if (time === undefined) throw new ScenarioError(`line ${line}`, `data.${field}: expected an ISO 8601 date-time`);
  return time;
}

function parseRecording(text: string): Recorded[] {
  const events: Recorded[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new ScenarioError(`line ${line}`, `not valid JSON (${(error as Error).message})`, { cause: error });
    }
    const result = recordedSchema.safeParse(value);
    if (!result.success) {
      throw new ScenarioError(
        `line ${line}`,
        'not a post event as `listen --json` prints it ({"event":"stream.post.created" or "stream.post.released","data":{…}}); tree output is not supported',
      );
    }
    const { event, data } = result.data;
    const time =
      event === 'stream.post.released' && data.releaseAt !== null
        ? timeOf(data.releaseAt, line, 'releaseAt')
        : timeOf(data.createdAt, line, 'createdAt');
    events.push({ ...result.data, line, time });
  });
  if (events.length === 0) throw new ScenarioError('', 'the recording holds no post events');
  return events;
}

/**
 * A scenario from what `listen --json` recorded: the same posts in the same order, each at
 * the time it was recorded at (the post's createdAt, or its releaseAt for a release) after
 * the first. A hidden post is published hidden, released as long after the start as it was
 * recorded, with the text its release carried; a step at each release's time lets a stepped
 * or faster playback fire it in its place. Repeats of a post (a reconnect's replay) are left out.
 */
export function scenarioFromRecording(text: string): Conversion {
  const events = parseRecording(text);
  const base = Math.min(...events.map((event) => event.time));
  const releasedText = new Map<string, string>();
  for (const event of events) {
    if (event.event === 'stream.post.released' && event.data.text !== null)
      releasedText.set(event.data.id, event.data.text);
  }
  const steps: Record<string, unknown>[] = [];
  const warnings: string[] = [];
  const created = new Set<string>();
  const released = new Set<string>();
  let at = 0;
  for (const event of events) {
    // Offsets never go back: the order of the recording is the order of the scenario.
    at = Math.max(at, event.time - base);
    const post = event.data;
    const publish = (hidden: boolean, releaseAfterStart = 0) => {
      const content = hidden ? releasedText.get(post.id) : post.text;
      if (content === undefined || content === null) {
        warnings.push(
          `line ${event.line}: the text of hidden post ${post.id} was not recorded (no release): published as "${UNRECORDED_TEXT}"`,
        );
      }
      steps.push({
        at,
        publish: {
          stream: post.streamId,
          content: content ?? UNRECORDED_TEXT,
          contentType: post.contentType,
          ...(hidden ? { hidden: true, releaseAt: `+${releaseAfterStart}ms` } : {}),
          ...(post.customTarget ? { customTarget: post.customTarget } : {}),
        },
      });
      created.add(post.id);
    };
    if (event.event === 'stream.post.created') {
      if (created.has(post.id)) continue;
      const releaseAt = post.hidden ? timeOf(post.releaseAt, event.line, 'releaseAt') - base : 0;
      publish(post.hidden, Math.max(releaseAt, at + 1));
      continue;
    }
    if (released.has(post.id)) continue;
    released.add(post.id);
    // A release of a post created before the recording began: the post is published hidden first.
    if (!created.has(post.id)) {
      publish(true, at + 1);
      at += 1;
    }
    steps.push({ at, log: `release of recorded post ${post.id}` });
  }
  return { steps, warnings };
}
