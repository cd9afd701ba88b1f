/** A benchmark's settings from the `--name=value` flags bench/run.mjs passes on. */
import { join } from 'node:path';
import { REPO_ROOT } from './processes.mjs';

/**
 * `defaults` overridden by the flags (camelCased by bench/run.mjs) that name
 * one of them; other flags are left to the caller. Each value must be a
 * positive number: a whole one with `whole`, and 0 is allowed too for the
 * names in `zero` (`true`: every name). With `profile`, `--profile[=DIR]`
 * sets `config.profile`, the folder for V8 CPU profiles (bench/profiles when
 * no DIR is given; see profileArgs).
 */
export function readFlags(flags = {}, defaults, { whole = false, zero = [], profile = false } = {}) {
  const config = profile ? { ...defaults, profile: undefined } : { ...defaults };
  for (const [name, value] of Object.entries(flags)) {
    if (profile && name === 'profile') {
      config.profile = value === 'true' ? join(REPO_ROOT, 'bench', 'profiles') : value;
      continue;
    }
    if (!(name in defaults)) continue;
    const number = Number(value);
    const allowZero = zero === true || zero.includes(name);
    if (!(whole ? Number.isInteger(number) : Number.isFinite(number)) || number < 0 || (number === 0 && !allowZero)) {
      throw new RangeError(
        `--${name} must be a ${allowZero ? 'non-negative' : 'positive'} ${whole ? 'whole ' : ''}number, got "${value}"`,
      );
    }
    config[name] = number;
  }
  return config;
}

/** Throws unless every setting named in `names` is a whole number. */
export function requireWhole(config, names) {
  for (const name of names) {
    if (!Number.isInteger(config[name])) throw new RangeError(`--${name} must be a whole number, got ${config[name]}`);
  }
}

/** Node options that make a server write a V8 CPU profile named after `name` into `config.profile` when it stops; none without --profile. */
export function profileArgs(config, name) {
  return config.profile
    ? ['--cpu-prof', '--cpu-prof-dir', config.profile, '--cpu-prof-name', `${name}-${Date.now()}.cpuprofile`]
    : [];
}
