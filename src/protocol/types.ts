export const CONTENT_TYPES = ['rawtext', 'markdown'] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];
/** What a publish without `contentType` gets (PROTOCOL.md B4). */
export const DEFAULT_CONTENT_TYPE: ContentType = 'rawtext';

export const SUBSCRIBE_COMMANDS = ['on-stream-post', 'on-stream-post-tree'] as const;
export type SubscribeCommandName = (typeof SUBSCRIBE_COMMANDS)[number];
export const TREE_COMMAND = 'on-stream-post-tree' satisfies SubscribeCommandName;
export const PUBLISH_COMMAND = 'add-stream-post';
export const COMMANDS = [...SUBSCRIBE_COMMANDS, PUBLISH_COMMAND] as const;
export type CommandName = (typeof COMMANDS)[number];

/** A post as delivered on the wire (PROTOCOL.md B3). */
export interface Post {
  id: string;
  streamId: string;
  streamName: string;
  text: string | null;
  contentType: ContentType;
  createdAt: string;
  releaseAt: string | null;
  hidden: boolean;
  customTarget: string | null;
  /**
   * This contract's addition (PROTOCOL.md B6): what a REST publisher sent as `metadata`; absent
   * when none; null while the post is hidden from this reader (B3, Embargo).
   */
  metadata?: Record<string, unknown> | null;
}

/** A post in the format of Tree-of-Alpha-style news terminals. */
export interface TreeItem {
  _id: string;
  title: string;
  body: string;
  /** The text again, for consumers of the hosted tree feed, which read `en` (then `title`). */
  en: string;
  source: string;
  link?: string;
  time: number;
  /** Epoch milliseconds of the release, for a post published with `releaseAt`. */
  releaseAt?: number;
  coin?: string;
  suggestions?: { coin: string; found: string[] }[];
  type: 'stream-post';
  contentType: ContentType;
  streamId: string;
  hidden: boolean;
}

export const STREAM_STATES = ['ACTIVE', 'DRAFT'] as const;
export type StreamState = (typeof STREAM_STATES)[number];
export const PRICING_TYPES = ['FREE', 'PAID', 'PACKAGE_ONLY'] as const;
export type PricingType = (typeof PRICING_TYPES)[number];
export const DEFAULT_STREAM_CATEGORY = 'OTHER';

export interface StreamSummary {
  id: string;
  name: string;
  custom: boolean;
  customTargets: string[];
  /** This contract's additions (PROTOCOL.md B6): absent from a server that leaves them out. */
  owner?: string;
  /** A custom stream the user follows and does not own: the targets it selected (it sees posts for these only). */
  selectedTargets?: string[];
  /** Whether the key that asked may publish to the stream (it is the stream's key). */
  publish?: boolean;
}

/** A stream as `GET /v1/streams` and `GET /v1/streams/{id}` give it (PROTOCOL.md B6). */
export interface Stream extends Required<Omit<StreamSummary, 'selectedTargets'>> {
  description: string;
  customTargetsData: Record<string, unknown>;
  label: string;
  paidStreamData: Record<string, unknown>;
  packageOnly: boolean;
  isFeatured: boolean;
  followers: number;
  /** The key's user follows or owns the stream. */
  following: boolean;
  selectedTargets?: string[];
}

export interface SubscribeArgs {
  /** Resolved later against the user's streams; empty means "all my streams". */
  streamIds: string[];
  lastPosts: number;
}

export interface PublishArgs {
  streamId: string;
  content: string;
  contentType: ContentType;
  releaseAt: string | null;
  customTarget: string | null;
  idempotencyKey: string | null;
}

export type Command =
  | { event: SubscribeCommandName; data: SubscribeArgs; requestId?: string }
  | { event: typeof PUBLISH_COMMAND; data: PublishArgs; requestId?: string };

export type ServerEventName =
  'connected' | 'sub_ack' | 'stream.post.created' | 'stream.post.released' | 'ack' | 'error' | 'keep-alive';

export interface Envelope<D = unknown> {
  event: string;
  data: D;
  requestId?: string;
}
