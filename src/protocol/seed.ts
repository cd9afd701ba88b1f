import type { PricingType, StreamState } from './types.js';

/**
 * A validated seed (docs/seed.md) with every default filled in: what the server starts
 * from, and what the serve banner and the demo read. The schema that produces it is the
 * server's (src/server/service/seed.ts); it checks it keeps to this shape.
 */
export interface Seed {
  users: {
    id: string;
    name: string;
    readerKey: string;
    follows: string[];
    customTargets: Record<string, string[]>;
  }[];
  streams: {
    id: string;
    name: string;
    owner: string;
    key: string;
    custom: boolean;
    customTargets: string[];
    description: string;
    label: string;
    isFeatured: boolean;
    packageOnly: boolean;
    /** A free word; `OTHER` when the seed names none. */
    category: string;
    state: StreamState;
    pricingType: PricingType;
    /** The count GET /v1/streams shows; by default how many of the seed's users follow the stream. */
    followers: number;
    /** Listed by GET /v1/streams to every key; a non-public stream only to its followers and owner. */
    public: boolean;
    customTargetsData: Record<string, unknown>;
    paidStreamData: Record<string, unknown>;
    /** ISO 8601, for `sortBy=CREATED_AT`; undated streams come after dated ones, in seed order. */
    createdAt?: string | undefined;
  }[];
  posts: {
    streamId: string;
    content: string;
    contentType: 'rawtext' | 'markdown';
    createdAt?: string | undefined;
    customTarget?: string | undefined;
  }[];
}
