import { PUBLISH_COMMAND } from '../protocol/types.js';

/** The `add-stream-post` frame for some arguments, without the fields that are unset. */
export function commandFrame(args: object): { event: typeof PUBLISH_COMMAND; data: Record<string, unknown> } {
  return { event: PUBLISH_COMMAND, data: setFields(args) };
}

/** The fields of `args` that are set (neither null nor undefined), in a new object. */
export function setFields(args: object, names: readonly string[] = Object.keys(args)): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const name of names) {
    const value = (args as Record<string, unknown>)[name];
    if (value !== null && value !== undefined) data[name] = value;
  }
  return data;
}
