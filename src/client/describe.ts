import type { ConnectionSettings } from './config.js';

/** One line saying where a command connects and how it authenticates: never the key. */
export function describeSettings(settings: ConnectionSettings, authQuery: boolean): string {
  const key = settings.apiKey === undefined ? 'no key' : `key in ${authQuery ? 'the ?apiKey= query' : 'the x-api-key header'}`;
  return `${settings.endpoint.wsUrl} (${key}${settings.profile ? `, profile ${settings.profile}` : ''})`;
}
