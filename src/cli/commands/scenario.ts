import { writeFile } from 'node:fs/promises';
import {
  StreamPostsError,
  scenarioFromListenRecording as scenarioOfRecording,
  type PlayOptions,
  type ScenarioPlayback,
  type StreamPostsServer,
} from '../../index.js';
import { EXIT, usageError } from '../exit.js';
import { readStdinText, readTextFile } from '../files.js';

export interface FromRecordingOptions {
  /** Where the scenario goes; standard output when undefined. */
  output?: string | undefined;
  /** With `output`: what was written, as JSON on stdout. */
  json?: boolean | undefined;
}

/**
 * `serve --scenario FILE`: plays it on the started server. A scenario that cannot play (a bad
 * step: the message names the line or step and the field) closes the server: a usage error.
 */
export async function playScenario(
  server: StreamPostsServer,
  path: string,
  options: PlayOptions,
): Promise<ScenarioPlayback> {
  try {
    return await server.play(path, options);
  } catch (error) {
    if (!(error instanceof StreamPostsError && error.code === 'invalid-scenario')) throw error;
    await server.close();
    throw usageError(`--scenario: ${error.message}`, { cause: error });
  }
}

/** `scenario from-recording FILE`: `listen --json` output to a scenario, as NDJSON (one step per line). */
export async function fromRecording(file: string, options: FromRecordingOptions): Promise<number> {
  const text = file === '-' ? await readStdinText() : await readTextFile(file, 'recording');
  let conversion;
  try {
    conversion = scenarioOfRecording(text);
  } catch (error) {
    if (error instanceof StreamPostsError && error.code === 'invalid-scenario')
      throw usageError(`recording ${file}: ${error.message}`);
    throw error;
  }
  for (const warning of conversion.warnings) process.stderr.write(`stream-posts: warning: ${warning}\n`);
  const ndjson = conversion.steps.map((step) => `${JSON.stringify(step)}\n`).join('');
  if (options.output === undefined) process.stdout.write(ndjson);
  else {
    await writeFile(options.output, ndjson);
    if (options.json === true)
      process.stdout.write(
        `${JSON.stringify({ output: options.output, steps: conversion.steps.length, warnings: conversion.warnings })}\n`,
      );
  }
  return EXIT.ok;
}
