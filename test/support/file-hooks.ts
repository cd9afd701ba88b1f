import type { TestContext } from 'vitest';

/**
 * What a support module cleans up for the running test file: the servers, processes and
 * connections a test or a file left behind. A module registers its hooks here once, when it
 * is first imported; test/support/per-file.ts (a setup file, run again before every test
 * file) hooks them into each file. So files that share one module cache (vitest's
 * `isolate: false`) each get them, not only the first file to import the module.
 */
export interface FileHooks {
  afterEach?: (context: TestContext) => Promise<void> | void;
  afterAll?: () => Promise<void> | void;
}

const registered: FileHooks[] = [];

/** Runs these hooks for every test file from now on: after hooks in reverse order of registration, as vitest stacks hooks. */
export function forEachFile(hooks: FileHooks): void {
  registered.push(hooks);
}

/** Runs `pick`'s hook of every registered module, the last registered first; every one runs even when one throws. */
export async function runFileHooks(
  pick: (hooks: FileHooks) => (() => Promise<void> | void) | undefined,
): Promise<void> {
  const errors: unknown[] = [];
  for (const hooks of [...registered].reverse()) {
    try {
      await pick(hooks)?.();
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `${errors.length} cleanups failed`);
}
