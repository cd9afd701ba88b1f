import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const timeouts = { testTimeout: 20_000, hookTimeout: 20_000 };
// graphql ships ESM and CommonJS side by side: graphql-ws, loaded by Node, would get the CommonJS copy while
// the server's own import gets the ESM one, and graphql refuses a schema from "another module". Transforming
// graphql-ws here resolves both to one copy, as the bundle in dist/ does.
const shared = {
  ...timeouts,
  server: { deps: { inline: ['graphql-ws'] } },
  // The support modules' cleanups (servers, processes, connections, the file's redis-server)
  // hooked into every test file, also where files share their modules (test/support/file-hooks.ts).
  setupFiles: ['test/support/per-file.ts'],
};

/**
 * The files that each get modules of their own (vitest's isolation); every other file of a
 * project shares one module cache per worker with the files run there before it, which
 * saves importing src/ and test/support/ again for each file. Shared modules are safe: the
 * support modules clean up after each file (file-hooks.ts), and a file that changes
 * process-wide state (fake timers, process.env, TZ) puts it back in its own hooks.
 */
const ISOLATED = [
  // vi.mock replaces marked-terminal in the module cache: every file that renders Markdown
  // after it in the same worker would get the mock, and one before it the real module.
  'test/render/markdown-escapes.test.ts',
  // Asserts that starting a server leaves zod's process-wide config as it found it: empty,
  // which holds only where no other file's modules have set it.
  'test/api/api.test.ts',
  // Counts objects in the heap (v8.queryObjects, a full collection each time): a heap holding
  // every module the worker loaded for earlier files makes each count slower.
  'test/server/retention.test.ts',
];

/** A project as two: the files that share modules, and ISOLATED's among its files with modules of their own. */
function project(name: string, include: string[], exclude: string[] = [], env: Record<string, string> = {}) {
  return [
    { test: { name, include, exclude: [...exclude, ...ISOLATED], env, isolate: false, ...shared } },
    {
      test: {
        name: `${name}-isolated`,
        include: ISOLATED.filter((file) => include.some((glob) => globMatches(glob, file))),
        exclude,
        env,
        isolate: true,
        ...shared,
      },
    },
  ].filter((entry) => entry.test.include.length > 0);
}

/** `test/x/**\/*.test.ts` and plain paths, all the globs above use. */
function globMatches(glob: string, file: string): boolean {
  const pattern = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*\*\//g, '(?:.*/)?')
    .replace(/\*/g, '[^/]*');
  return new RegExp(`^${pattern}$`).test(file);
}

/**
 * vitest's order (project by project, the longest files first), with each project's
 * isolated files just before its others: a worker that shares modules is kept only while
 * the next file is of its project and shares them too. (By name alone, the isolated
 * projects would come last, each after its project, and the retention tests of the three
 * projects, each holding hundreds of connections, would run at the same time at the end.)
 */
class IsolatedFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const base = (file: TestSpecification) => file.project.name.replace(/-isolated$/, '');
    const projects = [...new Set(sorted.map(base))];
    const rank = (file: TestSpecification) => projects.indexOf(base(file)) * 2 + (file.project.config.isolate ? 0 : 1);
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    sequence: { sequencer: IsolatedFirst },
    // Three files at a time on two cores: most tests wait on sockets and child processes, not
    // on the CPU. The whole suite here: 484 s with two, 430 s with three.
    maxWorkers: 3,
    // `npm run coverage`: line and branch coverage of src/ by V8, for the code each test
    // file's own process runs (a command spawned as a process is not counted).
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      // Written even when a test failed: the figures of the rest still count.
      reportOnFailure: true,
      reporter: ['text-summary', 'json-summary', 'html'],
      reportsDirectory: 'coverage',
    },
    projects: [
      // test/browser/: the dashboard in Chromium (skipped, saying why, where /usr/bin/chromium is missing outside CI).
      ...project('memory', ['test/**/*.test.ts', 'test/browser/**/*.test.ts']),
      // The protocol suite again, every server on a Redis store (a redis-server per test file).
      ...project(
        'redis',
        ['test/server/**/*.test.ts', 'test/faults/**/*.test.ts', 'test/browser/dashboard-http.test.ts'],
        ['test/server/units.test.ts', 'test/server/seed.test.ts'],
        { STREAM_POSTS_TEST_STORE: 'redis' },
      ),
      // The same suite, every server three servers on one Redis keyspace behind one round-robin address.
      ...project(
        'redis-3',
        ['test/server/**/*.test.ts', 'test/faults/**/*.test.ts'],
        [
          'test/server/units.test.ts',
          'test/server/seed.test.ts',
          // Injected faults belong to the instance they are set on (README, "Injected faults"): a fault
          // set through one address of three reaches a third of the connections, so those tests run
          // on one instance (the memory and redis projects).
          'test/server/admin-faults.test.ts',
          'test/faults/injected-*.test.ts',
          // A replay's matches, report and replayed connections are its instance's own, as
          // faults are: a test reading them through one address of three reads a third.
          'test/server/replay*.test.ts',
        ],
        { STREAM_POSTS_TEST_STORE: 'redis3' },
      ),
    ],
  },
});
