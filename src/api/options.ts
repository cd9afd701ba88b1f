/**
 * Checks of options handed to the library, thrown at once naming the option, like `ws`
 * does: a typo must not be silently ignored, nor a wrong type turn into a confusing failure
 * later. One rule (docs/api.md, "Bad options"): a number outside its range is a RangeError;
 * anything else wrong (an unknown name, a wrong type, a string not in the accepted form,
 * options that do not go together) a TypeError. Both carry `code: 'bad-option'` and the
 * option in `option`.
 */
export const BAD_OPTION = 'bad-option';

/** A bad option: a TypeError or RangeError (as docs/api.md promises) that names the option in a field too. */
export type OptionError = (TypeError | RangeError) & { readonly code: typeof BAD_OPTION; readonly option: string };

/** Makes every bad-option error in one way; `message` names the option (and starts with it, for a bad value). */
export function optionError(kind: 'type' | 'range', option: string, message: string, cause?: unknown): OptionError {
  const options = cause === undefined ? undefined : { cause };
  const error = kind === 'type' ? new TypeError(message, options) : new RangeError(message, options);
  return Object.assign(error, { code: BAD_OPTION, option } as const);
}

/** Whether `error` is a bad option of this library's (narrows it, so `code` and `option` compile under `strict`). */
export function isOptionError(error: unknown): error is OptionError {
  return optionOf(error) !== undefined;
}

/** The option a bad-option error is about, so a caller maps it to its own words without reading the message. */
export function optionOf(error: unknown): string | undefined {
  if (!(error instanceof TypeError || error instanceof RangeError)) return undefined;
  const { code, option } = error as Partial<OptionError>;
  return code === BAD_OPTION && typeof option === 'string' ? option : undefined;
}

export function checkKnownOptions(what: string, options: unknown, known: readonly string[]): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${what} options must be an object`);
  }
  for (const name in options) {
    if (Object.hasOwn(options, name) && !known.includes(name))
      throw optionError('type', name, `${what}: unknown option "${name}" (known: ${known.join(', ')})`);
  }
  return options as Record<string, unknown>;
}

export function optionalString(options: Record<string, unknown>, name: string): string | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw optionError('type', name, `${name} must be a string, got ${typeof value}`);
  return value;
}

export function requiredString(options: Record<string, unknown>, name: string): string {
  const value = optionalString(options, name);
  if (value === undefined || value === '') throw optionError('type', name, `${name} is required (a non-empty string)`);
  return value;
}

export function optionalBoolean(options: Record<string, unknown>, name: string): boolean | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw optionError('type', name, `${name} must be a boolean, got ${typeof value}`);
  return value;
}

export function optionalInteger(
  options: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number') throw optionError('type', name, `${name} must be a number, got ${typeof value}`);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw optionError('range', name, `${name} must be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

export function optionalStringList(
  options: Record<string, unknown>,
  name: string,
  alternatives = '',
): string[] | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw optionError('type', name, `${name} must be an array of strings${alternatives}`);
  }
  return [...value];
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** `timeoutMs`: how long one wait may take, within what a timer can hold; 10000 when not given. */
export function timeoutOption(options: Record<string, unknown>): number {
  return optionalInteger(options, 'timeoutMs', 1, 2_147_483_647) ?? DEFAULT_TIMEOUT_MS;
}
