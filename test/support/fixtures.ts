import type { Post } from '../../src/protocol/types.js';

/** The Post example of PROTOCOL.md B3, with any fields changed. */
export function samplePost(change: Partial<Post> = {}): Post {
  return {
    id: '01JWEX3G5B1P2FMXKPJAHEMTTH',
    streamId: '01J366WJBXF6BN036SXVNRAP8A',
    streamName: 'Crypto Legal Updates',
    text: 'SEC v. Binance: stipulation of dismissal filed',
    contentType: 'markdown',
    createdAt: '2026-11-21T12:00:00.000Z',
    releaseAt: null,
    hidden: false,
    customTarget: null,
    ...change,
  };
}
