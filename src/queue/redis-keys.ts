import type { AppConfig } from '../config/config';
import type { QueueName } from './queue.constants';

/**
 * Names of the service's Redis keys. On a Redis Cluster every multi-key
 * command or script must find its keys in one hash slot, so there the keys
 * carry a hash tag: each queue's keys `{<prefix>:<queue>}` (BullMQ's prefix,
 * one slot per queue, the queues spread over the masters), and the service's
 * own keys the tag of the group they are used together in (`{<prefix>:rl}`
 * for the rate limits and the auth epoch, read by one script; a queue's name
 * for state that belongs with that queue, in the queue's own slot).
 *
 * On one server or Sentinel the names stay as they always were
 * (`<prefix>:<queue>:…`, `<prefix>:rl:…`): a deployment upgraded in place keeps
 * its queued jobs and counters. Moving to a cluster is a new keyspace anyway
 * (docs/scaling-redis.md).
 */
export type KeyGroup = 'rl' | 'parked' | QueueName;

type KeyConfig = Pick<AppConfig, 'queuePrefix' | 'redis'>;

/** BullMQ's `prefix` option for one queue. */
export function queuePrefixOf(config: KeyConfig, queueName: string): string {
  return config.redis.kind === 'cluster'
    ? `{${config.queuePrefix}:${queueName}}`
    : config.queuePrefix;
}

/** A key of the service's own, `<prefix>:<rest>`, tagged with its group's slot on a cluster. */
export function redisKey(config: KeyConfig, group: KeyGroup, rest: string): string {
  return config.redis.kind === 'cluster'
    ? `{${config.queuePrefix}:${group}}:${rest}`
    : `${config.queuePrefix}:${rest}`;
}
