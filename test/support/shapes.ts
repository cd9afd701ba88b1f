import { ERROR_CODES } from '../../src/protocol/errors.js';
import { isPlainObject } from '../../src/protocol/objects.js';
import { COMMANDS } from '../../src/protocol/types.js';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const POST_FIELDS = [
  'contentType',
  'createdAt',
  'customTarget',
  'hidden',
  'id',
  'releaseAt',
  'streamId',
  'streamName',
  'text',
];

/**
 * Problems with a value that should be a Post of PROTOCOL.md B3; empty when it
 * is one. A delivered hidden post has neither text nor metadata; the publisher's ack always has them.
 */
export function postProblems(value: unknown, as: 'delivered' | 'ack' = 'delivered'): string[] {
  if (!isPlainObject(value)) return ['a post must be an object'];
  const problems: string[] = [];
  // `metadata` (a REST publisher's) is the one optional field.
  const keys = Object.keys(value)
    .filter((key) => key !== 'metadata')
    .sort();
  if (keys.join() !== POST_FIELDS.join()) problems.push(`post fields are ${keys.join()}`);
  const { metadata } = value;
  if (metadata !== undefined && metadata !== null && !isPlainObject(metadata))
    problems.push('metadata is not an object or null');
  const { id, streamId, streamName, text, contentType, createdAt, releaseAt, hidden, customTarget } = value;
  if (typeof id !== 'string' || !ULID.test(id)) problems.push(`id ${JSON.stringify(id)} is not a ULID`);
  if (typeof streamId !== 'string') problems.push('streamId is not a string');
  if (typeof streamName !== 'string') problems.push('streamName is not a string');
  if (text !== null && typeof text !== 'string') problems.push('text is not a string or null');
  if (contentType !== 'rawtext' && contentType !== 'markdown')
    problems.push(`contentType ${JSON.stringify(contentType)}`);
  if (typeof createdAt !== 'string' || !ISO_MS.test(createdAt)) problems.push(`createdAt ${JSON.stringify(createdAt)}`);
  if (releaseAt !== null && (typeof releaseAt !== 'string' || !ISO_MS.test(releaseAt))) {
    problems.push(`releaseAt ${JSON.stringify(releaseAt)}`);
  }
  if (typeof hidden !== 'boolean') problems.push('hidden is not a boolean');
  if (as === 'delivered' && hidden === true && text !== null) problems.push('a hidden post is delivered with text');
  if (as === 'delivered' && hidden === true && metadata !== null)
    problems.push('a hidden post is delivered without metadata: null');
  if (as === 'ack' && typeof text !== 'string') problems.push('an ack carries no text');
  if (customTarget !== null && typeof customTarget !== 'string') problems.push('customTarget is not a string or null');
  return problems;
}

/** Problems with an `error` event's envelope; empty when it is well formed. */
export function errorProblems(message: Record<string, unknown>): string[] {
  const data = message['data'];
  if (!isPlainObject(data)) return ['error data is not an object'];
  const problems: string[] = [];
  const extra = Object.keys(data).filter((key) => !['code', 'message', 'command'].includes(key));
  if (extra.length > 0) problems.push(`error data has unexpected fields ${extra.join()}`);
  if (!(ERROR_CODES as readonly unknown[]).includes(data['code']))
    problems.push(`error code ${JSON.stringify(data['code'])} is not in B5`);
  if (typeof data['message'] !== 'string' || data['message'].trim() === '')
    problems.push('error message is not a sentence');
  if ('command' in data && !(COMMANDS as readonly unknown[]).includes(data['command'])) {
    problems.push(`error command ${JSON.stringify(data['command'])} is not a command`);
  }
  return problems;
}

/** Problems with any envelope's top level (event, data, optional string requestId, nothing else). */
export function envelopeProblems(message: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const extra = Object.keys(message).filter((key) => !['event', 'data', 'requestId'].includes(key));
  if (extra.length > 0) problems.push(`envelope has unexpected fields ${extra.join()}`);
  if (typeof message['event'] !== 'string') problems.push('event is not a string');
  if (!('data' in message)) problems.push('envelope has no data');
  if ('requestId' in message && typeof message['requestId'] !== 'string') problems.push('requestId is not a string');
  return problems;
}

/** The post as a follower receives it while hidden. */
export function hiddenView(post: any): any {
  return { ...post, text: null, hidden: true };
}

/**
 * The tree item PROTOCOL.md B3 maps a post to. `derived` is what the text
 * yields (`link`, `coin`, `suggestions`): the test states it for the content it chose.
 */
export function expectedTreeItem(
  post: any,
  hidden: boolean,
  derived: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    _id: post.id,
    title: post.streamName,
    body: hidden ? '' : post.text,
    en: hidden ? '' : post.text,
    source: post.streamName,
    time: Date.parse(post.createdAt),
    type: 'stream-post',
    contentType: post.contentType,
    streamId: post.streamId,
    hidden,
    ...(post.releaseAt === null ? {} : { releaseAt: Date.parse(post.releaseAt) }),
    ...(hidden ? {} : derived),
  };
}
