/** What `GET /_admin/state` answers, and the library's `server.state()` resolves to. */
export interface AdminState {
  connections: number;
  subscriptions: number;
  posts: number;
  scheduledReleases: number;
  idempotencyKeys: number;
  /** The service's clock (wall clock plus every advance), ISO 8601. */
  now: string;
  clockOffsetMs: number;
}
