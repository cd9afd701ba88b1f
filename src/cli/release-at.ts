import type { ContentType } from '../protocol/types.js';

const RELATIVE = /^\+(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$/i;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `+10m`, `+2h`, `+1d` (also s and w) from now, or an ISO 8601 date-time passed through for validation. */
export function resolveReleaseAt(text: string, now: number): string {
  const relative = RELATIVE.exec(text.trim());
  if (!relative) return text.trim();
  return new Date(now + Number(relative[1]) * UNIT_MS[relative[2]!.toLowerCase()]!).toISOString();
}

export interface PublishDefaults {
  streamId?: string | undefined;
  contentType: ContentType;
}
