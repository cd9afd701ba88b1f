/**
 * The service's addresses as the client takes them, for the CLI's `--url` (and the demo):
 * a bad one is a bad option (`code: 'bad-option'`, `option: 'url'`) worded as the caller asks.
 * Not exported from the package: `connect({ url })` takes the same addresses.
 * @internal
 */
import { ClientError } from '../client/errors.js';
import { LIBRARY_WORDS, resolveEndpoints, type Endpoint, type EndpointWords } from '../client/endpoint.js';
import { optionError } from './options.js';

export { DEFAULT_URL, splitUrls, type Endpoint, type EndpointWords } from '../client/endpoint.js';

/** The addresses of one service, tried in turn; its errors name the address and the key's way as `words` say. */
export function serviceEndpoints(urls: string | readonly string[], words: EndpointWords): Endpoint[] {
  try {
    return resolveEndpoints(urls, words);
  } catch (error) {
    if (error instanceof ClientError) throw optionError('type', 'url', error.message, error);
    throw error;
  }
}

/** The library's words: `url`, and the `apiKey` option for the key. */
export const LIBRARY_URL_WORDS: EndpointWords = LIBRARY_WORDS;
