/** WebSocket close codes both ends use (PROTOCOL.md), and how people read them. */
export const CLOSE_NORMAL = 1000;
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_POLICY_VIOLATION = 1008;
export const CLOSE_INTERNAL_ERROR = 1011;
/** RFC 6455 "service restart": reconnect (and replay); the service lost events, or its store is away. */
export const CLOSE_SERVICE_RESTART = 1012;
export const CLOSE_SLOW_CONSUMER = 1013;
export const CLOSE_UNAUTHORIZED = 4401;
/** `serve --replay`: the client sent what the recording has no answer for (PROTOCOL.md B9). */
export const CLOSE_NO_RECORDED_REPLY = 4400;

/** The reason the service sends with `CLOSE_UNAUTHORIZED` on the plain endpoint. */
export const UNAUTHORIZED_CLOSE_REASON = 'unauthorized';

/** Close codes people meet, in words, for a close that came without a reason. */
export const CLOSE_REASONS: Readonly<Record<number, string>> = {
  [CLOSE_NORMAL]: 'normal closure',
  [CLOSE_GOING_AWAY]: 'the service is going away',
  1006: 'connection lost',
  1009: 'a message to the service was too large',
  [CLOSE_INTERNAL_ERROR]: 'server error',
  [CLOSE_SLOW_CONSUMER]: 'too slow: the service dropped this reader',
  [CLOSE_UNAUTHORIZED]: UNAUTHORIZED_CLOSE_REASON,
};
