import type { Logger } from '../../logger.js';
import { StoreError } from '../store-error.js';

/** What the start-up check needs of a Redis client: one raw command. */
export interface RawCommands {
  sendCommand<T>(args: string[]): Promise<T>;
}

/** A field of an `INFO` section (`name:value` lines); undefined when Redis does not give it. */
export function infoField(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

/**
 * What Redis is set to do with the service's data, checked once at start (PROTOCOL.md B8):
 * a `maxmemory-policy` that can evict keys would drop posts and the key table at random, so
 * it is refused unless `allowEviction`; a Redis without persistence (no AOF, no RDB save
 * point) loses everything on a restart, which is a choice, so it is only a warning. A Redis
 * that hides these settings (INFO or CONFIG renamed away) is taken as it is. Redis before 7.0
 * cannot run the scripts (their first line declares that they write) and is refused.
 * Returns the policy, when Redis tells it.
 */
export async function checkRedisConfig(
  redis: RawCommands,
  options: { allowEviction: boolean; logger: Logger },
): Promise<string | undefined> {
  const server = await redis.sendCommand<string>(['INFO', 'server']).catch(() => '');
  const version = infoField(server, 'redis_version');
  if (version !== undefined && Number.parseInt(version, 10) < 7) {
    throw new StoreError(
      'store-unsupported',
      `Redis ${version} is too old: the service needs Redis 7.0 or later (its scripts declare that they write, so a full Redis refuses them whole)`,
    );
  }
  const memory = await redis.sendCommand<string>(['INFO', 'memory']).catch(() => '');
  const policy = infoField(memory, 'maxmemory_policy');
  if (policy !== undefined && policy !== 'noeviction') {
    if (!options.allowEviction) {
      throw new StoreError(
        'store-evicts',
        `Redis's maxmemory-policy is ${policy}: it may evict the service's keys and lose posts and keys. Run CONFIG SET maxmemory-policy noeviction (and set it in redis.conf), or accept the risk with --allow-eviction (allowEviction)`,
      );
    }
    options.logger.log('warn', 'Redis may evict keys: posts it evicts are lost', { maxmemoryPolicy: policy });
  }
  const persistence = await redis.sendCommand<string>(['INFO', 'persistence']).catch(() => '');
  if (infoField(persistence, 'aof_enabled') !== '0') return policy;
  const save = await redis.sendCommand<string[]>(['CONFIG', 'GET', 'save']).catch(() => undefined);
  if (save === undefined || (save[1] ?? '').trim() !== '') return policy;
  options.logger.log('warn', 'Redis persistence is off (no appendonly, no save points): a restart loses every post', {
    fix: 'CONFIG SET appendonly yes',
  });
  return policy;
}
