/** Reading WebSocket frames as bytes, without decoding them (the hot path of the measuring side). */

/** Whether `buffer` starts with the bytes of `prefix` (a Buffer). */
export function startsWith(buffer, prefix) {
  return buffer.length >= prefix.length && buffer.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** The whole number written in ASCII digits at `buffer[start]`, `count` digits long. */
export function digits(buffer, start, count) {
  let value = 0;
  for (let i = start; i < start + count; i++) value = value * 10 + (buffer[i] - 48);
  return value;
}
