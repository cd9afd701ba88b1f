import * as z from 'zod/mini';
import { ALERT_ACTIONS, ALERT_FIELDS, type AlertRuleInput } from '../terminal/alerts.js';

/**
 * `$XDG_CONFIG_HOME/stream-posts/config.json` (default `~/.config/…`):
 * `{"profiles": {"NAME": {"url": "wss://…", "apiKey": "…"}}}`.
 * A profile named `default` applies when no other is chosen.
 */
export interface Profile {
  /** One address, or several instances of one service (tried in turn, like repeated `--url`). */
  url?: string | string[] | undefined;
  apiKey?: string | undefined;
  /** The stream `post` publishes to when `--stream` is not given. */
  stream?: string | undefined;
  /** `terminal`'s alert rules, tried in order after `--alert`. */
  alerts?: AlertRuleInput[] | undefined;
}

export interface ConfigFile {
  profiles: Record<string, Profile>;
}

export const configSchema: z.ZodMiniType<ConfigFile> = z.object({
  profiles: z._default(
    z.record(
      z.string(),
      z.object({
        url: z.optional(z.union([z.string(), z.array(z.string())])),
        apiKey: z.optional(z.string()),
        stream: z.optional(z.string()),
        alerts: z.optional(
          z.array(
            z.object({
              match: z.string(),
              field: z.optional(z.enum(ALERT_FIELDS)),
              streams: z.optional(z.array(z.string())),
              action: z.enum(ALERT_ACTIONS),
              command: z.optional(z.string()),
            }),
          ),
        ),
      }),
    ),
    {},
  ),
});
