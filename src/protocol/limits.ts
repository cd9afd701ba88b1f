export const MAX_FRAME_BYTES = 1024 * 1024;
export const MAX_CONTENT_BYTES = 64 * 1024;
export const MAX_LAST_POSTS = 100;
/** The longest post id a client accepts (UTF-8 bytes): a longer one is a malformed message. */
export const MAX_POST_ID_BYTES = 128;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;
export const MAX_REQUEST_ID_LENGTH = 256;
export const STREAM_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const REST_DEFAULT_LIMIT = 50;
/** Coins listed in a tree item's `suggestions`, and spellings kept per coin (PROTOCOL.md B3). */
export const MAX_TREE_SUGGESTIONS = 10;
export const MAX_SUGGESTION_SPELLINGS = 10;
/** The most a message from the service may be for the client; more ends the connection with 1009. */
export const MAX_SERVICE_MESSAGE_BYTES = 16 * 1024 * 1024;
