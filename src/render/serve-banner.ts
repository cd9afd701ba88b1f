import chalk, { Chalk } from 'chalk';
import type { Seed } from '../protocol/seed.js';

export interface BannerInput {
  url: string;
  httpUrl: string;
  admin: boolean;
  seed: Seed;
  seedSource: string;
  color: boolean;
}

/** The environment variable naming a key of the seed (`serve --exec`, the README lists them). */
export function keyVariable(kind: 'reader' | 'stream', id: string): string {
  const suffix = id.toUpperCase().replace(/[^A-Z0-9]/g, '_');
  return kind === 'reader' ? `STREAM_POSTS_READER_KEY_${suffix}` : `STREAM_POSTS_STREAM_KEY_${suffix}`;
}

/** What `serve` prints at start-up: where it listens, the seed's keys, lines to paste. */
export function formatServeBanner(input: BannerInput): string {
  const c = input.color ? chalk : new Chalk({ level: 0 });
  const { seed } = input;
  const userWidth = Math.max(...seed.users.map((user) => user.id.length));
  const streamWidth = Math.max(0, ...seed.streams.map((stream) => stream.id.length));
  const readerKeyWidth = Math.max(...seed.users.map((user) => user.readerKey.length));
  const streamKeyWidth = Math.max(0, ...seed.streams.map((stream) => stream.key.length));
  const firstReader = seed.users.find((user) => user.follows.length > 0) ?? seed.users[0]!;
  const lines = [
    `listening on ${input.url}`,
    c.dim(
      `REST on ${input.httpUrl}/v1 · health ${input.httpUrl}/healthz${input.admin ? ` · admin ${input.httpUrl}/_admin` : ''}`,
    ),
    ...(input.admin ? [`dashboard ${input.httpUrl}/`] : []),
    c.dim(`seed: ${input.seedSource}`),
    '',
    c.bold('reader keys') + c.dim(' (subscribe as this user)'),
    ...seed.users.map(
      (user) =>
        `  ${user.id.padEnd(userWidth)}  ${c.cyan(user.readerKey.padEnd(readerKeyWidth))}  ${c.dim(`${user.name}; follows ${user.follows.join(', ') || 'nothing'}`)}`,
    ),
  ];
  if (seed.streams.length > 0) {
    lines.push(
      '',
      c.bold('stream keys') + c.dim(' (publish to this stream; subscribe as its owner)'),
      ...seed.streams.map(
        (stream) =>
          `  ${stream.id.padEnd(streamWidth)}  ${c.yellow(stream.key.padEnd(streamKeyWidth))}  ${c.dim(
            `${stream.name}; owner ${stream.owner}${stream.custom ? `; custom: ${stream.customTargets.join(', ')}` : ''}`,
          )}`,
      ),
    );
  }
  lines.push(
    '',
    c.dim('# paste into another shell:'),
    `export STREAM_POSTS_URL=${input.url}`,
    `export STREAM_POSTS_API_KEY=${firstReader.readerKey}`,
    '',
  );
  return lines.join('\n');
}
