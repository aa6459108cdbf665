import { parseRedisUrl } from '../config/redis-url';
import { queuePrefixOf, redisKey } from './redis-keys';

describe('Redis key names', () => {
  const standalone = { queuePrefix: 'mailwright', redis: parseRedisUrl('redis://127.0.0.1:6379') };
  const sentinel = {
    queuePrefix: 'mailwright',
    redis: parseRedisUrl('redis+sentinel://127.0.0.1:26379/mymaster'),
  };
  const cluster = {
    queuePrefix: 'mailwright',
    redis: parseRedisUrl('redis+cluster://127.0.0.1:7000,127.0.0.1:7001'),
  };

  it('keeps the names of earlier releases on one server and Sentinel (an in-place upgrade keeps its jobs)', () => {
    for (const config of [standalone, sentinel]) {
      expect(queuePrefixOf(config, 'delivery')).toBe('mailwright');
      expect(redisKey(config, 'rl', 'rl:project:p1')).toBe('mailwright:rl:project:p1');
      expect(redisKey(config, 'rl', 'auth:epoch')).toBe('mailwright:auth:epoch');
      expect(redisKey(config, 'parked', 'parked-projects')).toBe('mailwright:parked-projects');
      expect(redisKey(config, 'webhooks', 'webhooks:slots:e1')).toBe(
        'mailwright:webhooks:slots:e1',
      );
    }
  });

  it('hash-tags every queue and every group on a cluster', () => {
    expect(queuePrefixOf(cluster, 'delivery')).toBe('{mailwright:delivery}');
    expect(redisKey(cluster, 'rl', 'rl:project:p1')).toBe('{mailwright:rl}:rl:project:p1');
    expect(redisKey(cluster, 'rl', 'auth:epoch')).toBe('{mailwright:rl}:auth:epoch');
    // Webhook slots share the webhooks queue's slot.
    expect(redisKey(cluster, 'webhooks', 'webhooks:slots:e1')).toMatch(/^\{mailwright:webhooks\}:/);
    expect(queuePrefixOf(cluster, 'webhooks')).toBe('{mailwright:webhooks}');
  });
});
