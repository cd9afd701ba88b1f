import { z } from 'zod';
import type { ConfigFile } from './config.js';

export const configSchema: z.ZodType<ConfigFile> = z.object({
  profiles: z
    .record(
      z.string(),
      z.object({
        url: z.string().optional(),
        apiKey: z.string().optional(),
      }),
    )
    .default({}),
});
