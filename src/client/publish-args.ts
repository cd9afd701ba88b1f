import { PUBLISH_COMMAND } from '../protocol/types.js';

/** The `add-stream-post` frame for some arguments, without the fields that are unset. */
export function commandFrame(args: object): { event: typeof PUBLISH_COMMAND; data: Record<string, unknown> } {
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) if (value !== null && value !== undefined) data[key] = value;
  return { event: PUBLISH_COMMAND, data };
}
