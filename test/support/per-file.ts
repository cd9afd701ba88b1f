// A setup file (vitest.config.ts): evaluated again before each test file, even where files
// share their modules, so each file gets the support modules' cleanups (file-hooks.ts).
import { afterAll, afterEach } from 'vitest';
import { runFileHooks } from './file-hooks.js';

afterEach((context) => runFileHooks((hooks) => hooks.afterEach && (() => hooks.afterEach!(context))));

afterAll(() => runFileHooks((hooks) => hooks.afterAll));
