import * as z from 'zod/mini';
import type { ConfigFile } from './settings.js';

export const configSchema: z.ZodMiniType<ConfigFile> = z.object({
  profiles: z._default(
    z.record(
      z.string(),
      z.object({
        url: z.optional(z.union([z.string(), z.array(z.string())])),
        apiKey: z.optional(z.string()),
        stream: z.optional(z.string()),
      }),
    ),
    {},
  ),
});
