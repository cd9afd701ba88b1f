/**
 * The service's addresses, parsed once into `Endpoint`s wherever they enter: the library's
 * `url` option, the CLI's `--url` (and the demo). A bad one is a bad option (`code:
 * 'bad-option'`, `option: 'url'`) worded as the caller asks. The CLI hands the `Endpoint`s
 * on as they are (`openClient`, `publishRestOrRefusal`), never as text to parse again.
 */
import { ClientError } from '../client/errors.js';
import { LIBRARY_WORDS, resolveEndpoints, type Endpoint, type EndpointWords } from '../client/endpoint.js';
import { optionError } from './options.js';

/** The addresses of one service, tried in turn; its errors name the address and the key's way as `words` say. */
export function serviceEndpoints(urls: string | readonly string[], words: EndpointWords): Endpoint[] {
  try {
    return resolveEndpoints(urls, words);
  } catch (error) {
    if (error instanceof ClientError) throw optionError('type', 'url', error.message, error);
    throw error;
  }
}

/** The addresses of the library's `url` option (its shape checked with the other options); a bad one is the caller's bug, a TypeError. */
export function libraryEndpoints(url: string | readonly string[]): Endpoint[] {
  return serviceEndpoints(url, LIBRARY_WORDS);
}
