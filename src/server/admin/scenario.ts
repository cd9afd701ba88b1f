import ms from 'ms';
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { parsePublishArgs } from '../../protocol/commands.js';
import { parseIsoDateTime } from '../../protocol/dates.js';
import { ProtocolError } from '../../protocol/errors.js';
import type { ContentType } from '../../protocol/types.js';
import type { Seed } from '../../protocol/seed.js';
import { DocumentError } from '../document-error.js';

const englishMessages = en().localeError;

/** Why a scenario cannot be played: `where` names the step (index, and line in a file) and the field. */
export class ScenarioError extends DocumentError {
  constructor(where: string, detail: string, options?: { cause?: unknown }) {
    super('invalid-scenario', where, detail, options);
  }
}

/** When a hidden post is released: an instant, or a time after the scenario's start. */
export type ReleaseTime = { absolute: number } | { afterStartMs: number };

export interface PublishStep {
  streamId: string;
  content: string;
  contentType: ContentType;
  releaseAt: ReleaseTime | null;
  customTarget: string | null;
  idempotencyKey: string | null;
}

/** One step of a scenario, checked: `at` is milliseconds after the scenario's start. */
export type ScenarioStep = { index: number; line: number | undefined; at: number } & (
  | { kind: 'publish'; publish: PublishStep }
  | { kind: 'advance-clock'; ms: number }
  | { kind: 'fault'; fault: Record<string, unknown> }
  | { kind: 'clear-faults' }
  | { kind: 'log'; message: string }
);

export interface Scenario {
  steps: ScenarioStep[];
}

/** What a scenario may use besides the store; fault steps are refused at load without `faults`. */
export interface ScenarioFaults {
  applyFault(fault: Record<string, unknown>): Promise<unknown>;
  clearFaults(): Promise<unknown>;
  /** The fault's problem in words, or undefined when it is fine: checked at load. */
  checkFault?(fault: Record<string, unknown>): string | undefined;
}

// Ten years, as the admin clock allows: far enough for any feed, small enough to stay exact.
const MAX_OFFSET_MS = 10 * 366 * 24 * 3600 * 1000;

/** "1.5s", "200ms", "2m" or a number of milliseconds. */
function duration(text: unknown): number | undefined {
  let value: number | undefined;
  if (typeof text === 'number') value = text;
  else if (typeof text === 'string') {
    try {
      value = /^\s*\d+\s*$/.test(text) ? Number(text) : ms(text.trim() as ms.StringValue);
    } catch {
      value = undefined;
    }
  }
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_OFFSET_MS) return undefined;
  return Math.round(value);
}

const durationSchema = (field: string) =>
  z.pipe(
    z.union([z.number(), z.string()], {
      error: `${field} must be a duration such as "1.5s", "200ms" or a number of ms`,
    }),
    z.transform((value: number | string, context) => {
      const parsed = duration(value);
      if (parsed === undefined) {
        context.issues.push({
          code: 'custom',
          input: value,
          message: `must be a duration such as "1.5s", "200ms" or a number of ms, up to 10 years; got ${JSON.stringify(value)}`,
        });
        return z.NEVER;
      }
      return parsed;
    }),
  );

const releaseAtSchema = z.pipe(
  z.union([z.number(), z.string()], {
    error: 'releaseAt must be an ISO 8601 date-time, "+<duration>" after the start, or ms after the start',
  }),
  z.transform((value: number | string, context): ReleaseTime => {
    const relative =
      typeof value === 'number' ? duration(value) : value.startsWith('+') ? duration(value.slice(1)) : undefined;
    if (relative !== undefined) return { afterStartMs: relative };
    const absolute = typeof value === 'string' ? parseIsoDateTime(value) : undefined;
    if (absolute !== undefined) return { absolute };
    context.issues.push({
      code: 'custom',
      input: value,
      message: `releaseAt must be an ISO 8601 date-time with a zone, "+<duration>" after the start (e.g. "+90s"), or ms after the start; got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }),
);

const publishSchema = z.strictObject({
  stream: z.string({ error: 'stream is required: the id of a stream of the seed' }),
  content: z.string({ error: 'content is required and must be a string' }),
  contentType: z._default(
    z.enum(['rawtext', 'markdown'], { error: 'contentType must be "rawtext" or "markdown"' }),
    'rawtext',
  ),
  hidden: z.optional(z.boolean({ error: 'hidden must be true or false' })),
  releaseAt: z.optional(releaseAtSchema),
  customTarget: z.optional(z.string({ error: 'customTarget must be a string' })),
  idempotencyKey: z.optional(z.string({ error: 'idempotencyKey must be a string' })),
});

const stepSchema = z.strictObject({
  at: durationSchema('at'),
  publish: z.optional(publishSchema),
  advanceClock: z.optional(durationSchema('advanceClock')),
  fault: z.optional(z.record(z.string(), z.unknown(), { error: 'fault must be a fault object' })),
  clearFaults: z.optional(z.literal(true, { error: 'clearFaults must be true' })),
  log: z.optional(z.string({ error: 'log must be a string' })),
});

const ACTIONS = ['publish', 'advanceClock', 'fault', 'clearFaults', 'log'] as const;

function pathOf(path: readonly PropertyKey[]): string {
  return path
    .map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
    .join('')
    .replace(/^\./, '');
}

/** One step, checked against the seed (and the faults on offer); throws ScenarioError naming the step and field. */
function parseStep(value: unknown, where: string, seed: Seed, faults: ScenarioFaults | undefined) {
  const result = stepSchema.safeParse(value, { error: englishMessages });
  if (!result.success) {
    const issue = result.error.issues[0];
    const field = pathOf(issue?.path ?? []);
    throw new ScenarioError(where, `${field === '' ? '' : `${field}: `}${issue?.message ?? 'invalid step'}`);
  }
  return { at: result.data.at, ...parseAction(result.data, where, seed, faults) };
}

function parseAction(step: z.output<typeof stepSchema>, where: string, seed: Seed, faults: ScenarioFaults | undefined) {
  const actions = ACTIONS.filter((name) => step[name] !== undefined);
  if (actions.length !== 1) {
    throw new ScenarioError(
      where,
      actions.length === 0
        ? `a step needs one of ${ACTIONS.join(', ')}`
        : `a step does one thing; this one has ${actions.join(' and ')}`,
    );
  }
  if (step.publish) {
    const publish = checkPublish(step.publish, where, seed);
    const release = publish.releaseAt;
    if (step.publish.hidden === true && release && 'afterStartMs' in release && release.afterStartMs <= step.at) {
      throw new ScenarioError(where, 'publish.releaseAt: a hidden post must be released after the step publishes it');
    }
    return { kind: 'publish' as const, publish };
  }
  if (step.advanceClock !== undefined) return { kind: 'advance-clock' as const, ms: step.advanceClock };
  if (step.log !== undefined) return { kind: 'log' as const, message: step.log };
  if (!faults) {
    throw new ScenarioError(
      where,
      `${step.fault ? 'fault' : 'clearFaults'}: this server cannot inject faults from a scenario, so a scenario with fault steps cannot play here`,
    );
  }
  if (step.clearFaults) return { kind: 'clear-faults' as const };
  const fault = step.fault!;
  const problem = typeof fault['type'] !== 'string' ? 'type is required' : faults.checkFault?.(fault);
  if (problem !== undefined) throw new ScenarioError(where, `fault.${problem}`);
  return { kind: 'fault' as const, fault };
}

function checkPublish(publish: z.output<typeof publishSchema>, where: string, seed: Seed): PublishStep {
  const fail = (detail: string): never => {
    throw new ScenarioError(where, `publish.${detail}`);
  };
  const stream = seed.streams.find((candidate) => candidate.id === publish.stream);
  if (!stream) fail(`stream: the seed has no stream "${publish.stream}"`);
  if (publish.hidden === true && publish.releaseAt === undefined)
    fail('releaseAt: a hidden post needs its release time');
  if (publish.hidden === false && publish.releaseAt !== undefined)
    fail('hidden: a post with a releaseAt is hidden until then');
  try {
    // The service's own checks of content, contentType, customTarget and idempotencyKey.
    parsePublishArgs({
      streamId: publish.stream,
      content: publish.content,
      contentType: publish.contentType,
      customTarget: publish.customTarget,
      idempotencyKey: publish.idempotencyKey,
    });
  } catch (error) {
    if (error instanceof ProtocolError) fail(error.message);
    throw error;
  }
  const target = publish.customTarget;
  if (stream!.custom && (target === undefined || !stream!.customTargets.includes(target))) {
    fail(`customTarget: stream "${stream!.id}" is custom: one of ${stream!.customTargets.join(', ')} is required`);
  }
  if (!stream!.custom && target !== undefined) fail(`customTarget: stream "${stream!.id}" is not a custom stream`);
  return {
    streamId: publish.stream,
    content: publish.content,
    contentType: publish.contentType,
    releaseAt: publish.releaseAt ?? null,
    customTarget: target ?? null,
    idempotencyKey: publish.idempotencyKey ?? null,
  };
}

/**
 * A scenario from a JSON array of steps, or its text: a JSON array, or NDJSON (one step per
 * line). Every step is checked before anything plays; steps are put in time order, steps of
 * the same time keeping theirs.
 */
export function parseScenario(input: unknown, seed: Seed, faults?: ScenarioFaults): Scenario {
  let items: { value: unknown; line: number | undefined }[];
  if (typeof input === 'string') items = scenarioItems(input);
  else if (Array.isArray(input)) items = input.map((value) => ({ value, line: undefined }));
  else throw new ScenarioError('', 'a scenario is an array of steps, or its JSON or NDJSON text');
  if (items.length === 0) throw new ScenarioError('', 'the scenario has no steps');
  const steps = items.map(({ value, line }, index): ScenarioStep => {
    const where = line === undefined ? `step ${index}` : `line ${line}`;
    return { index, line, ...parseStep(value, where, seed, faults) };
  });
  return { steps: steps.sort((a, b) => a.at - b.at || a.index - b.index) };
}

function scenarioItems(text: string): { value: unknown; line: number | undefined }[] {
  if (text.trimStart().startsWith('[')) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ScenarioError('', `not valid JSON (${(error as Error).message})`, { cause: error });
    }
    if (!Array.isArray(value)) throw new ScenarioError('', 'a JSON scenario is an array of steps');
    return value.map((item) => ({ value: item, line: undefined }));
  }
  const items: { value: unknown; line: number }[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    try {
      items.push({ value: JSON.parse(raw), line: i + 1 });
    } catch (error) {
      throw new ScenarioError(`line ${i + 1}`, `not valid JSON (${(error as Error).message})`, { cause: error });
    }
  });
  return items;
}
