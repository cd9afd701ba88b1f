import { defineConfig } from 'vitest/config';

const timeouts = { testTimeout: 20_000, hookTimeout: 20_000 };
// graphql ships ESM and CommonJS side by side: graphql-ws, loaded by Node, would get the CommonJS copy while
// the server's own import gets the ESM one, and graphql refuses a schema from "another module". Transforming
// graphql-ws here resolves both to one copy, as the bundle in dist/ does.
const shared = { ...timeouts, server: { deps: { inline: ['graphql-ws'] } } };

export default defineConfig({
  test: {
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
      {
        // test/browser/: the dashboard in Chromium (skipped, saying why, where /usr/bin/chromium is missing outside CI).
        test: { name: 'memory', include: ['test/**/*.test.ts', 'test/browser/**/*.test.ts'], ...shared },
      },
      {
        // The protocol suite again, every server on a Redis store (a redis-server per test file).
        test: {
          name: 'redis',
          include: ['test/server/**/*.test.ts', 'test/faults/**/*.test.ts', 'test/browser/dashboard-http.test.ts'],
          exclude: ['test/server/units.test.ts', 'test/server/seed.test.ts'],
          env: { STREAM_POSTS_TEST_STORE: 'redis' },
          ...shared,
        },
      },
      {
        // The same suite, every server three servers on one Redis keyspace behind one round-robin address.
        test: {
          name: 'redis-3',
          include: ['test/server/**/*.test.ts', 'test/faults/**/*.test.ts'],
          // Injected faults belong to the instance they are set on (README, "Injected faults"): a fault
          // set through one address of three reaches a third of the connections, so those tests run
          // on one instance (the memory and redis projects).
          exclude: [
            'test/server/units.test.ts',
            'test/server/seed.test.ts',
            'test/server/admin-faults.test.ts',
            'test/faults/injected-*.test.ts',
            // A replay's matches, report and replayed connections are its instance's own, as
            // faults are: a test reading them through one address of three reads a third.
            'test/server/replay*.test.ts',
          ],
          env: { STREAM_POSTS_TEST_STORE: 'redis3' },
          ...shared,
        },
      },
    ],
  },
});
