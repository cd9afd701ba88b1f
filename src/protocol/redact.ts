const KEY_QUERY = /([?&](?:apiKey|api_key|key)=)[^&#\s]*/gi;

/** Removes API keys carried in a URL's query string. */
export function redactUrl(url: string): string {
  return url.replace(KEY_QUERY, '$1[redacted]');
}
