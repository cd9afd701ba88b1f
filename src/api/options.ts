/**
 * The error of a bad option handed to the library, thrown at once naming the option, like
 * `ws` does: a typo must not be silently ignored, nor a wrong type turn into a confusing
 * failure later. One rule (docs/api.md, "Bad options"): a number outside its range is a
 * RangeError; anything else wrong (an unknown name, a wrong type, a string not in the
 * accepted form, options that do not go together) a TypeError. Both carry `code:
 * 'bad-option'` and the option in `option`. The options themselves are checked by the
 * tables of option-table.ts; this file stays light, for the CLI's start-up reads it.
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
