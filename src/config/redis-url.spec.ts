import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from './config';
import { parseRedisUrl } from './redis-url';

describe('parseRedisUrl (REDIS_URL forms, contract "Scaling")', () => {
  it('keeps redis:// and rediss:// URLs as they are', () => {
    expect(parseRedisUrl('redis://:secret@10.0.0.5:6380/2')).toEqual({
      kind: 'standalone',
      url: 'redis://:secret@10.0.0.5:6380/2',
    });
    expect(parseRedisUrl('rediss://cache.example.com').kind).toBe('standalone');
  });

  it('reads a cluster seed list, with credentials and default ports', () => {
    expect(parseRedisUrl('redis+cluster://app:p%40ss@10.0.0.1:7000,10.0.0.2,[::1]:7002')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 6379 },
        { host: '::1', port: 7002 },
      ],
      username: 'app',
      password: 'p@ss',
    });
    expect(parseRedisUrl('redis+cluster://h:1/').kind).toBe('cluster');
  });

  it('reads sentinels, the master name and a database', () => {
    expect(parseRedisUrl('redis+sentinel://:pw@s1:26380,s2/mymaster/3')).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26380 },
        { host: 's2', port: 26379 },
      ],
      masterName: 'mymaster',
      db: 3,
      username: undefined,
      password: 'pw',
    });
  });

  it.each([
    ['http://x', /expected a redis:\/\/, rediss:\/\/, redis\+cluster:\/\//],
    ['redis://h/x', /not a database number/],
    ['redis+cluster://', /no host:port/],
    ['redis+cluster://a:7000,,b:7001', /"" is not host:port/],
    ['redis+cluster://a:70000', /port must be from 1 to 65535/],
    ['redis+cluster://a:7000/1', /no database number other than 0/],
    ['redis+sentinel://s1:26379', /no master name/],
    ['redis+sentinel://s1:26379/m/x', /not a database number/],
    ['redis+sentinel://s1:26379/m/1/2', /master name/],
    ['redis+cluster://a b:1', /not host:port/],
  ])('refuses %s with a message saying why', (raw, message) => {
    expect(() => parseRedisUrl(raw)).toThrow(message);
  });

  it('names REDIS_URL at boot and never echoes its password', () => {
    let problems = '';
    try {
      loadConfig(
        { REDIS_URL: 'redis+sentinel://:hunter2@s1:26379' },
        mkdtempSync(join(tmpdir(), 'mw-config-')),
      );
    } catch (error) {
      problems = (error as { problems: string[] }).problems.join('\n');
    }
    expect(problems).toMatch(/^REDIS_URL: no master name/);
    expect(problems).not.toMatch(/hunter2/);
  });
});
