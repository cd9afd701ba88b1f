import { createHash } from 'node:crypto';
import { ProtocolError } from '../../protocol/errors.js';
import { PRICING_TYPES, STREAM_STATES, type Stream } from '../../protocol/types.js';
import { decodeToken, encodeToken, queryBoolean, queryEnum, queryInteger, queryValue } from './rest-query.js';
import type { StreamPostsService } from '../service/service.js';
import { followedBy, follows } from '../service/visibility.js';
import type { Identity, StreamRecord, UserRecord } from '../stores/store.js';

const MAX_STREAMS_PAGE = 50;
const DEFAULT_STREAMS_PAGE = 10;
const SORTS = ['FOLLOWERS', 'CREATED_AT'] as const;
const PRICING_FILTERS = [...PRICING_TYPES, 'ALL'] as const;
const MAX_CATEGORY_LENGTH = 64;

/** Whether the key may see the stream at all: a non-public one is shown to its followers and owner only. */
export function listedFor(user: UserRecord, stream: StreamRecord): boolean {
  return stream.public || follows(user, stream);
}

/** A stream in its REST form (PROTOCOL.md B6), as the key that asked sees it. */
export function restStream(stream: StreamRecord, user: UserRecord, identity: Identity): Stream {
  const following = follows(user, stream);
  const selects = stream.custom && following && stream.owner !== user.id;
  return {
    id: stream.id,
    name: stream.name,
    description: stream.description,
    customTargets: [...stream.customTargets],
    customTargetsData: stream.customTargetsData,
    label: stream.label,
    paidStreamData: stream.paidStreamData,
    packageOnly: stream.packageOnly,
    isFeatured: stream.isFeatured,
    custom: stream.custom,
    owner: stream.owner,
    followers: stream.followers,
    following,
    ...(selects ? { selectedTargets: [...(user.customTargets.get(stream.id) ?? [])] } : {}),
    publish: identity.streamId === stream.id,
  };
}

interface StreamQuery {
  isFeatured: boolean | undefined;
  custom: boolean | undefined;
  minFollowers: number | undefined;
  state: (typeof STREAM_STATES)[number];
  category: string | undefined;
  pricingType: (typeof PRICING_FILTERS)[number] | undefined;
  sortBy: (typeof SORTS)[number] | undefined;
}

function parseStreamQuery(url: URL): StreamQuery {
  const category = queryValue(url, 'streamCategory');
  if (category !== undefined && category.length > MAX_CATEGORY_LENGTH) {
    throw new ProtocolError('invalid-argument', `streamCategory must be at most ${MAX_CATEGORY_LENGTH} characters`);
  }
  return {
    isFeatured: queryBoolean(url, 'isFeatured'),
    custom: queryBoolean(url, 'custom'),
    minFollowers: queryInteger(url, 'minFollowers', 0, Number.MAX_SAFE_INTEGER),
    state: queryEnum(url, 'streamState', STREAM_STATES) ?? 'ACTIVE',
    category,
    pricingType: queryEnum(url, 'pricingType', PRICING_FILTERS),
    sortBy: queryEnum(url, 'sortBy', SORTS),
  };
}

function matches(stream: StreamRecord, query: StreamQuery): boolean {
  return (
    stream.state === query.state &&
    (query.isFeatured === undefined || stream.isFeatured === query.isFeatured) &&
    (query.custom === undefined || stream.custom === query.custom) &&
    (query.minFollowers === undefined || stream.followers >= query.minFollowers) &&
    (query.category === undefined || stream.category === query.category) &&
    (query.pricingType === undefined || query.pricingType === 'ALL' || stream.pricingType === query.pricingType)
  );
}

/** Sorts stably, so equal streams keep the seed's order. */
function sortStreams(streams: StreamRecord[], sortBy: StreamQuery['sortBy']): StreamRecord[] {
  const byNumber = (value: (stream: StreamRecord) => number) => (a: StreamRecord, b: StreamRecord) =>
    value(b) - value(a);
  if (sortBy === 'FOLLOWERS') return streams.sort(byNumber((stream) => stream.followers));
  // Newest first; an undated stream after every dated one.
  if (sortBy === 'CREATED_AT') {
    return streams.sort((a, b) =>
      a.createdAt === null || b.createdAt === null
        ? Number(a.createdAt === null) - Number(b.createdAt === null)
        : b.createdAt - a.createdAt,
    );
  }
  // The hosted default: active first, then featured, then most followed.
  return streams.sort(
    (a, b) =>
      Number(b.state === 'ACTIVE') - Number(a.state === 'ACTIVE') ||
      Number(b.isFeatured) - Number(a.isFeatured) ||
      b.followers - a.followers,
  );
}

/** Ties a token to the list it pages through: the same filters, sort and user. */
function listFingerprint(query: StreamQuery, userId: string): string {
  return createHash('sha256')
    .update(JSON.stringify([query, userId]))
    .digest('base64url')
    .slice(0, 12);
}

/** `GET /v1/streams`: one page of the streams the key may see, filtered and sorted. */
export async function listStreams(
  service: StreamPostsService,
  identity: Identity,
  url: URL,
): Promise<{ streams: Stream[]; nextToken?: string }> {
  const limit = queryInteger(url, 'limit', 1, MAX_STREAMS_PAGE, DEFAULT_STREAMS_PAGE);
  const query = parseStreamQuery(url);
  const fingerprint = listFingerprint(query, identity.userId);
  let offset = 0;
  const token = queryValue(url, 'nextToken');
  if (token !== undefined) {
    const fields = decodeToken(token, 'nextToken');
    if (fields['q'] !== fingerprint) {
      throw new ProtocolError(
        'invalid-argument',
        'nextToken belongs to another list: keep the same filters and sortBy',
      );
    }
    offset = typeof fields['o'] === 'number' && Number.isSafeInteger(fields['o']) ? fields['o'] : -1;
    if (offset < 0) throw new ProtocolError('invalid-argument', 'nextToken is malformed: pass it back as it was');
  }
  await service.caughtUp();
  const user = service.userOf(identity);
  // The seed's streams never change while serving, so an offset into this list is a stable place.
  const listed = sortStreams(
    service.streams().filter((stream) => listedFor(user, stream) && matches(stream, query)),
    query.sortBy,
  );
  const page = listed.slice(offset, offset + limit).map((stream) => restStream(stream, user, identity));
  const next = offset + limit;
  return { streams: page, ...(next < listed.length ? { nextToken: encodeToken({ o: next, q: fingerprint }) } : {}) };
}

/** The stream as the key may see it; a non-public one it does not follow is as unknown as a missing one. */
export async function visibleStream(
  service: StreamPostsService,
  identity: Identity,
  streamId: string,
): Promise<{ stream: StreamRecord; user: UserRecord }> {
  await service.caughtUp();
  const stream = service.stream(streamId);
  const user = service.userOf(identity);
  if (!stream || !listedFor(user, stream)) throw new ProtocolError('not-found', `no stream with id "${streamId}"`);
  return { stream, user };
}

/**
 * `POST /v1/streams/{id}/custom-targets`: replaces the targets the key's user selected on a
 * custom stream it follows. All or nothing: one bad target and nothing changes.
 */
export async function selectTargets(
  service: StreamPostsService,
  identity: Identity,
  streamId: string,
  body: Record<string, unknown>,
): Promise<{ customTargets: string[] }> {
  const { stream, user } = await visibleStream(service, identity, streamId);
  if (!stream.custom) {
    throw new ProtocolError(
      'invalid-argument',
      `stream "${stream.id}" is not a custom stream: it has no targets to select`,
    );
  }
  if (!followedBy(user).has(stream.id)) {
    throw new ProtocolError('forbidden', `this key's user does not follow stream "${stream.id}"`);
  }
  const targets = body['customTargets'];
  if (!Array.isArray(targets)) {
    throw new ProtocolError('invalid-argument', 'customTargets must be an array of target names, e.g. ["BTC", "ETH"]');
  }
  if (targets.length > stream.customTargets.length) {
    throw new ProtocolError(
      'invalid-argument',
      `customTargets lists ${targets.length} targets; stream "${stream.id}" offers ${stream.customTargets.length}: ${stream.customTargets.join(', ')}`,
    );
  }
  const seen = new Set<string>();
  for (const [i, target] of targets.entries()) {
    if (typeof target !== 'string') throw new ProtocolError('invalid-argument', `customTargets[${i}] must be a string`);
    const shown = JSON.stringify(target.slice(0, 64));
    if (!stream.customTargets.includes(target)) {
      throw new ProtocolError(
        'invalid-argument',
        `customTargets[${i}] ${shown} is not a target of stream "${stream.id}" (targets are case-sensitive: ${stream.customTargets.join(', ')})`,
      );
    }
    if (seen.has(target)) throw new ProtocolError('invalid-argument', `customTargets[${i}] ${shown} is listed twice`);
    seen.add(target);
  }
  await service.setCustomTargets(user, stream.id, [...seen]);
  return { customTargets: [...seen] };
}
