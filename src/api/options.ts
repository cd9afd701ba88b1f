/**
 * Checks of options handed to the library, thrown at once as TypeError /
 * RangeError naming the option, like `ws` does: a typo must not be silently
 * ignored, nor a wrong type turn into a confusing failure later.
 */
export function checkKnownOptions(what: string, options: unknown, known: readonly string[]): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${what} options must be an object`);
  }
  for (const name in options) {
    if (Object.hasOwn(options, name) && !known.includes(name))
      throw new TypeError(`${what}: unknown option "${name}" (known: ${known.join(', ')})`);
  }
  return options as Record<string, unknown>;
}

export function optionalString(options: Record<string, unknown>, name: string): string | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new TypeError(`${name} must be a string, got ${typeof value}`);
  return value;
}

export function requiredString(options: Record<string, unknown>, name: string): string {
  const value = optionalString(options, name);
  if (value === undefined || value === '') throw new TypeError(`${name} is required (a non-empty string)`);
  return value;
}

export function optionalBoolean(options: Record<string, unknown>, name: string): boolean | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean, got ${typeof value}`);
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
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number, got ${typeof value}`);
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
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
    throw new TypeError(`${name} must be an array of strings${alternatives}`);
  }
  return [...value];
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** `timeoutMs`: how long one wait may take, within what a timer can hold; 10000 when not given. */
export function timeoutOption(options: Record<string, unknown>): number {
  return optionalInteger(options, 'timeoutMs', 1, 2_147_483_647) ?? DEFAULT_TIMEOUT_MS;
}
