/**
 * The service's addresses, parsed once into `Endpoint`s wherever they enter: the library's
 * `url` option, the CLI's `--url` (and the demo). A bad one is a bad option (`code:
 * 'bad-option'`, `option: 'url'`) worded as the caller asks. The CLI hands the `Endpoint`s
 * on as they are (`openClient`, `publishRestOrRefusal`), never as text to parse again.
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

/**
 * The service's addresses from the library's `url` option (a string, or a non-empty array of
 * them, all tree feed addresses or none); a bad one is the caller's bug, a TypeError.
 */
export function checkEndpoints(given: Record<string, unknown>): Endpoint[] {
  const url = given['url'];
  const list = Array.isArray(url) ? url : [url];
  if (list.length === 0 || !list.every((item) => typeof item === 'string' && item !== '')) {
    throw optionError('type', 'url', 'url is required (a non-empty string, or an array of them)');
  }
  return serviceEndpoints(list as string[], LIBRARY_WORDS);
}

/** The library's words: `url`, and the `apiKey` option for the key. */
export const LIBRARY_URL_WORDS: EndpointWords = LIBRARY_WORDS;
