import { readFile } from 'node:fs/promises';
import type { Seed } from '../protocol/seed.js';
import type { Post } from '../protocol/types.js';
import { parseScenario, ScenarioError, type Scenario, type ScenarioFaults } from '../server/admin/scenario.js';
import type { ScenarioSummary, StepOutcome } from '../server/admin/scenario-player.js';
import { scenarioFromRecording } from '../server/admin/scenario-recording.js';
import { storedPost } from '../server/stores/store.js';
import { StreamPostsError } from './errors.js';

export type { ScenarioSummary };

/** A recording turned into a scenario (`scenarioFromRecording`). */
export interface ScenarioConversion {
  /** The scenario's steps, ready for `server.play` (or a file for `serve --scenario`). */
  steps: Record<string, unknown>[];
  /** What the scenario cannot reproduce exactly (a post hidden when recorded, say), for the user to know. */
  warnings: string[];
}

/** A scenario playing on a server (`server.play`). */
export interface ScenarioPlayback {
  /** Steps in the scenario. */
  readonly steps: number;
  /** Resolves when every step has run (or `stop()` was called), with what was published. */
  readonly done: Promise<ScenarioSummary>;
  /** No further step runs. */
  stop(): void;
}

/** What one `server.step()` did. */
export interface ScenarioStepResult {
  /** The step's index in the scenario as given. */
  index: number;
  /** Milliseconds after the scenario's start. */
  at: number;
  kind: 'publish' | 'advance-clock' | 'fault' | 'clear-faults' | 'log';
  /** A publish's post (as its publisher's ack carries it) and whether it was a duplicate. */
  post?: Post;
  duplicate?: boolean;
  /** Why the service refused the step (the scenario goes on). */
  error?: { code: string; message: string };
}

/** A step's outcome with its post in the wire form. */
export function stepResult(outcome: StepOutcome): ScenarioStepResult {
  const { post, ...rest } = outcome;
  return post === undefined ? rest : { ...rest, post: storedPost(post) };
}

async function readScenarioFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ScenarioError('', `cannot be read (${reason})`, { cause: error });
  }
}

/** A scenario given to `server.play`, checked: a bad one is `invalid-scenario` naming where. */
export async function loadScenario(
  scenario: readonly object[] | string,
  seed: Seed,
  faults: ScenarioFaults | undefined,
): Promise<Scenario> {
  try {
    const input = typeof scenario === 'string' ? await readScenarioFile(scenario) : scenario;
    return parseScenario(input, seed, faults);
  } catch (error) {
    if (!(error instanceof ScenarioError)) throw error;
    const where = typeof scenario === 'string' ? `scenario file ${scenario}: ` : 'scenario: ';
    throw new StreamPostsError('invalid-scenario', where + error.message, { cause: error, path: error.where });
  }
}

/**
 * A recording of posts (the NDJSON `listen --json` writes) turned into a scenario: the same
 * posts, in the same order and timing, as steps `server.play` takes (`scenario
 * from-recording` is this on the command line). A recording that cannot be turned is
 * `invalid-scenario`, its message naming the line.
 */
export function scenarioFromListenRecording(text: string): ScenarioConversion {
  if (typeof text !== 'string') throw new TypeError('scenarioFromListenRecording: the recording must be a string');
  try {
    return scenarioFromRecording(text);
  } catch (error) {
    if (error instanceof ScenarioError) throw new StreamPostsError('invalid-scenario', error.message, { cause: error });
    throw error;
  }
}
