/**
 * A validated seed (docs/seed.md) with every default filled in: what the server starts
 * from, and what the serve banner and the demo read. The schema that produces it is the
 * server's (src/server/seed.ts); it checks it keeps to this shape.
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
  }[];
  posts: {
    streamId: string;
    content: string;
    contentType: 'rawtext' | 'markdown';
    createdAt?: string | undefined;
    customTarget?: string | undefined;
  }[];
}
