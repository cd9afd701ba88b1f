import * as z from 'zod/mini';
import { ALERT_ACTIONS } from '../terminal/alerts.js';
import type { ConfigFile } from './settings.js';

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
