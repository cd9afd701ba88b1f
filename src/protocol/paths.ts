/** The plain WebSocket endpoint, after the service's base URL. */
export const WS_PATH = '/v1/ws';
/** The hosted service's tree feed address (PROTOCOL.md B3), used with `?format=tree`. */
export const TREE_FEED_PATH = '/graphql';
/** Arguments the tree feed address takes in its query besides `format=tree`. */
export const TREE_FEED_ARGS = ['streamIds', 'lastPosts'] as const;
/** The REST list of the key's streams; a stream's posts are under `${STREAMS_PATH}/{id}/`. */
export const STREAMS_PATH = '/v1/streams';
/** Where a key goes: this header, or (`authQuery`) this query parameter. */
export const API_KEY_HEADER = 'x-api-key';
export const API_KEY_QUERY = 'apiKey';
/** `hello=1` asks `serve` for this contract's dialect (PROTOCOL.md B1a); the hosted service ignores it. */
export const HELLO_QUERY = 'hello';
