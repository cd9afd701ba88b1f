import { fstatSync } from 'node:fs';
import type { CommandInput } from './command-io.js';
import { readStdinText, readTextFile } from './files.js';
import { usageError } from './exit.js';

export interface ContentSources {
  content: string | undefined;
  file: string | undefined;
  /** Standard input carries the key (`--api-key-stdin`), so it cannot carry the content. */
  keyFromStdin: boolean;
  stdin: CommandInput;
}

/** Standard input is a pipe or a redirected file (not a terminal, /dev/null or a socket left open by a parent). */
function stdinIsPiped(stdin: CommandInput): boolean {
  // A stream handed in without a descriptor (a test's) is read as a pipe is.
  if (typeof stdin.fd !== 'number') return true;
  try {
    const stats = fstatSync(stdin.fd);
    return stats.isFIFO() || stats.isFile();
  } catch {
    return false;
  }
}

function readStdinContent(sources: ContentSources, how: string): Promise<string> {
  if (sources.keyFromStdin)
    throw usageError(`${how} reads the content from standard input, which --api-key-stdin uses for the key`);
  return readStdinText(sources.stdin);
}

/**
 * The post's text: the argument (`-` reads standard input), `--file FILE` (`-`: standard
 * input), or, with neither, standard input when it is piped (`echo hi | stream-posts post`).
 * Undefined when none gave any (a prompt may ask for it).
 */
export async function readContent(sources: ContentSources): Promise<string | undefined> {
  if (sources.file !== undefined) {
    if (sources.content !== undefined) throw usageError('give the content as an argument or with --file, not both');
    return sources.file === '-' ? readStdinContent(sources, '--file -') : readTextFile(sources.file, '--file');
  }
  if (sources.content === '-') return readStdinContent(sources, 'the content "-"');
  if (sources.content !== undefined || sources.keyFromStdin || !stdinIsPiped(sources.stdin)) return sources.content;
  const piped = await readStdinText(sources.stdin);
  return piped === '' ? undefined : piped;
}

/** Content that is empty or only whitespace publishes nothing anyone can read: refused before anything is sent. */
export function checkContent(content: string): void {
  if (content.trim() === '') {
    throw usageError(
      content === ''
        ? 'the content is empty: nothing to publish'
        : 'the content is only whitespace: nothing to publish',
    );
  }
}

/** Words after the content: the content was not quoted. */
export function checkExtraArguments(extra: readonly string[]): void {
  if (extra.length === 0) return;
  throw usageError(
    `the content is one argument, but ${extra.length + 1} were given: quote it, e.g. stream-posts post "Fed holds rates"`,
  );
}
