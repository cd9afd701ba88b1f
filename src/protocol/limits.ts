export const MAX_FRAME_BYTES = 1024 * 1024;
export const MAX_CONTENT_BYTES = 64 * 1024;
export const MAX_LAST_POSTS = 100;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;
export const MAX_REQUEST_ID_LENGTH = 256;
export const STREAM_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const REST_DEFAULT_LIMIT = 50;
