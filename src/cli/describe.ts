import { redactSecrets } from '../api/internal.js';
import type { ConnectionSettings } from './settings.js';

/** One line saying where a command connects and how it authenticates: never the key. */
export function describeSettings(settings: ConnectionSettings, authQuery: boolean): string {
  const key =
    settings.apiKey === undefined ? 'no key' : `key in ${authQuery ? 'the ?apiKey= query' : 'the x-api-key header'}`;
  return `${wsWhere(settings)} (${key}${settings.profile ? `, profile ${settings.profile}` : ''})`;
}

/** `text` (an address, a status line) without the key, should a path hold it (escaped or not). */
export function withoutKey(settings: Pick<ConnectionSettings, 'apiKey'>, text: string): string {
  return redactSecrets(text, [settings.apiKey]);
}

/** The addresses in one phrase, for status lines and errors. */
export function wsWhere(settings: Pick<ConnectionSettings, 'endpoints' | 'apiKey'>): string {
  return withoutKey(settings, settings.endpoints.map((endpoint) => endpoint.wsUrl).join(', '));
}

/** The REST origins in one phrase, for status lines and errors. */
export function httpWhere(settings: Pick<ConnectionSettings, 'endpoints' | 'apiKey'>): string {
  return withoutKey(settings, settings.endpoints.map((endpoint) => endpoint.httpBase).join(', '));
}
