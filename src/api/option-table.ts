// The library's options as zod/mini tables, one per entry point (startServer, connect,
// subscribe, publish, publishRest, the REST reads), as the settings and state files are
// checked: each option's schema says its type and range, and its words say, naming the
// option, what was expected and what came. A table turns the first bad option into the one
// error docs/api.md promises ("Bad options"): a RangeError for a number outside its range,
// else a TypeError, both with `code: 'bad-option'` and the option in `option`.
import * as z from 'zod/mini';
import { optionError, type OptionError } from './options.js';

/** An option's schema, made for its name (the words name it). */
export type OptionSchema<T> = (name: string) => z.ZodMiniType<T>;

/** What a value of the wrong type is, for a message: its type only (it may be a secret given in the wrong place). */
function typeOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}

/** A check that refuses with these words; `range` marks a number outside its range (a RangeError). */
function refusing<T>(accepts: (value: T) => boolean, words: (value: T) => string, range = false): z.core.$ZodCheck<T> {
  return z.refine(accepts, {
    error: (issue) => words(issue.input as T),
    ...(range ? { params: { range: true } } : {}),
    abort: true,
  });
}

/** A value that passes `accepts`, else a TypeError in these words. */
export function shaped<T>(accepts: (value: unknown) => boolean, words: (name: string, value: unknown) => string) {
  return (name: string): z.ZodMiniType<T> =>
    z.custom<T>(accepts, { error: (issue) => words(name, issue.input), abort: true });
}

/** Any string. */
export const text: OptionSchema<string> = (name) =>
  z.string({ error: (issue) => `${name} must be a string, got ${typeOf(issue.input)}` });

/** A string that must be given and not empty. */
export const requiredText: OptionSchema<string> = (name) => {
  const words = () => `${name} is required (a non-empty string)`;
  return z.string({ error: words }).check(refusing((value: string) => value !== '', words));
};

export const flag: OptionSchema<boolean> = (name) =>
  z.boolean({ error: (issue) => `${name} must be a boolean, got ${typeOf(issue.input)}` });

/** A whole number from `min` to `max`, both included (NaN and fractions are out of range); `what` it is, in words. */
export function integer(min: number, max: number, what = 'an integer'): OptionSchema<number> {
  return (name) =>
    shaped<number>(
      (value) => typeof value === 'number',
      (option, value) => `${option} must be a number, got ${typeOf(value)}`,
    )(name).check(
      // A number, then its range: NaN and Infinity are numbers out of range, as fractions are.
      refusing(
        (value: number) => Number.isSafeInteger(value) && value >= min && value <= max,
        (value) => `${name} must be ${what} from ${min} to ${max}, got ${value}`,
        true,
      ),
    );
}

/** One of the `choices`. */
export function oneOf<const C extends readonly [string, ...string[]]>(choices: C): OptionSchema<C[number]> {
  return (name) =>
    z.enum(choices, {
      error: (issue) =>
        `${name} must be ${choices.map((choice) => `'${choice}'`).join(' or ')}, got ${typeof issue.input === 'string' ? `'${issue.input}'` : typeOf(issue.input)}`,
    });
}

/** An array of strings; `alternatives` says what else the option takes (" or 'all'"). */
export function textList(alternatives = ''): OptionSchema<string[]> {
  return (name) => {
    const words = () => `${name} must be an array of strings${alternatives}`;
    return z.array(z.string({ error: words }), { error: words });
  };
}

/** A function (a callback option): checked as one, called as the option's type says. */
export function callback<F>(): OptionSchema<F> {
  return shaped<F>(
    (value) => typeof value === 'function',
    (name) => `${name} must be a function`,
  );
}

/**
 * `schema`, with a rule on the value it gives: `problem` returns what is wrong (naming the
 * option), or nothing; `range` when a value it refuses is a number out of its range.
 */
export function ruled<T>(
  schema: OptionSchema<T>,
  problem: (name: string, value: T) => string | undefined,
  range = false,
) {
  return (name: string): z.ZodMiniType<T> =>
    schema(name).check(
      z.check<T>((context) => {
        const wrong = problem(name, context.value);
        if (wrong === undefined) return;
        context.issues.push({
          code: 'custom',
          message: wrong,
          input: context.value,
          ...(range ? { params: { range } } : {}),
        });
      }),
    );
}

/** Anything: for an option whose rule says all (`ruled(anything, …)`). */
export const anything: OptionSchema<unknown> = () => z.unknown();

type Shape = Record<string, OptionSchema<unknown>>;
/** What each option of a table gives once checked (undefined when not given, unless required). */
export type TableValues<S extends Shape> = { [K in keyof S]: z.output<ReturnType<S[K]>> };

/** Options every one of which may be left out. */
export function optional<S extends Shape>(
  shape: S,
): { [K in keyof S]: OptionSchema<z.output<ReturnType<S[K]>> | undefined> } {
  return Object.fromEntries(
    Object.entries(shape).map(([name, schema]) => [name, (option: string) => z.optional(schema(option))]),
  ) as never;
}

/**
 * The options of one entry point (`what` names it in messages): `check` gives them checked,
 * or throws the bad-option error of the first that is wrong, an unknown name first of all.
 */
export class OptionTable<S extends Shape> {
  readonly #shape: S;
  /** Built at the first check: a command that never calls an entry point does not pay for its table. */
  #schema: z.ZodMiniType | undefined;
  readonly names: readonly string[];

  constructor(
    readonly what: string,
    shape: S,
  ) {
    this.#shape = shape;
    this.names = Object.keys(shape);
  }

  check(options: unknown): TableValues<S> {
    if (options === null || typeof options !== 'object' || Array.isArray(options))
      throw new TypeError(`${this.what} options must be an object`);
    this.#schema ??= z.strictObject(Object.fromEntries(this.names.map((name) => [name, this.#shape[name]!(name)])));
    const result = z.safeParse(this.#schema, options);
    if (result.success) return result.data as TableValues<S>;
    const { issues } = result.error;
    throw this.#error(issues.find((issue) => issue.code === 'unrecognized_keys') ?? issues[0]!);
  }

  #error(issue: z.core.$ZodIssue): OptionError {
    const option = String(issue.path[0]);
    if (issue.code === 'unrecognized_keys') {
      const name = issue.keys[0]!;
      // An unknown field of an object option (`heartbeat`) is that option's fault.
      if (issue.path.length > 0)
        return optionError('type', option, `${issue.path.join('.')}: unknown option "${name}"`);
      return optionError('type', name, `${this.what}: unknown option "${name}" (known: ${this.names.join(', ')})`);
    }
    const range = issue.code === 'custom' && (issue.params as { range?: boolean } | undefined)?.range === true;
    return optionError(range ? 'range' : 'type', option, issue.message);
  }
}

/** `url`: the service, one address or the instances of one service, tried in turn. */
export type ServiceUrl = string | readonly string[];

/** `url` as given: a non-empty string, or a non-empty array of them (their form is checked as they are parsed). */
export const URL_OPTION: OptionSchema<ServiceUrl> = shaped<ServiceUrl>(
  (value) => {
    const list = Array.isArray(value) ? value : [value];
    return list.length > 0 && list.every((item) => typeof item === 'string' && item !== '');
  },
  (name) => `${name} is required (a non-empty string, or an array of them)`,
);

/** How long one wait of the library's takes when `timeoutMs` is not given. */
export const LIBRARY_TIMEOUT_MS = 10_000;

/** `timeoutMs`: how long one wait may take, within what a timer can hold. */
export const TIMEOUT_OPTION: OptionSchema<number> = integer(1, 2_147_483_647);
