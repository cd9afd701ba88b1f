const KEY_QUERY = /([?&](?:apiKey|api_key|key)=)[^&#\s]*/gi;

/** Removes API keys carried in a URL's query string. */
export function redactUrl(url: string): string {
  return url.replace(KEY_QUERY, '$1[redacted]');
}

/** Replaces every occurrence of the given secrets in a text. */
export function redactSecrets(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return redactUrl(out);
}
