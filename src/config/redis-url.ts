/** One node of a Redis Cluster or one Sentinel. */
export interface RedisNode {
  host: string;
  port: number;
}

/**
 * Where Redis is, read from REDIS_URL. `standalone` is a `redis://` or
 * `rediss://` URL kept as written; a cluster is reached through any of its
 * seed nodes; a Sentinel deployment through its sentinels and the master's
 * name. Credentials in a cluster or sentinel URL are those of the Redis
 * nodes, not of the sentinels.
 */
export type RedisTarget =
  | { kind: 'standalone'; url: string }
  | {
      kind: 'cluster';
      nodes: RedisNode[];
      username: string | undefined;
      password: string | undefined;
    }
  | {
      kind: 'sentinel';
      sentinels: RedisNode[];
      masterName: string;
      db: number;
      username: string | undefined;
      password: string | undefined;
    };

const MULTI_HOST = /^(redis\+cluster|redis\+sentinel):\/\/(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?$/;

/** Parses REDIS_URL; throws an Error whose message says what is wrong with it (no credentials echoed). */
export function parseRedisUrl(raw: string): RedisTarget {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1]?.toLowerCase();
  if (scheme === 'redis' || scheme === 'rediss') {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new Error('not a valid URL');
    }
    if (!url.hostname) throw new Error('no host');
    const db = url.pathname.replace(/^\//, '');
    if (db !== '' && !/^\d{1,2}$/.test(db)) throw new Error(`"/${db}" is not a database number`);
    return { kind: 'standalone', url: raw };
  }
  if (scheme !== 'redis+cluster' && scheme !== 'redis+sentinel') {
    throw new Error(
      `expected a redis://, rediss://, redis+cluster:// or redis+sentinel:// URL, got ${scheme ? `"${scheme}:"` : 'no scheme'}`,
    );
  }
  const match = MULTI_HOST.exec(raw);
  if (!match) throw new Error(`expected ${scheme}://[user:password@]host:port,host:port,…`);
  const [, , userinfo, hostList, path = ''] = match;
  const { username, password } = credentials(userinfo);
  const defaultPort = scheme === 'redis+cluster' ? 6379 : 26379;
  if (hostList.trim() === '') throw new Error('no host:port given');
  const nodes = hostList.split(',').map((entry) => parseNode(entry.trim(), defaultPort));
  const segments = path.split('/').filter((s) => s !== '');
  if (scheme === 'redis+cluster') {
    // A cluster has database 0 only.
    if (segments.length > 1 || (segments.length === 1 && segments[0] !== '0')) {
      throw new Error('a Redis Cluster has no database number other than 0');
    }
    return { kind: 'cluster', nodes, username, password };
  }
  if (segments.length === 0)
    throw new Error('no master name: redis+sentinel://host:port,…/<master name>');
  if (segments.length > 2)
    throw new Error('expected /<master name>[/<database number>] after the sentinels');
  const masterName = decodeURIComponent(segments[0]);
  const db = segments[1] ?? '0';
  if (!/^\d{1,2}$/.test(db)) throw new Error(`"/${db}" is not a database number`);
  return { kind: 'sentinel', sentinels: nodes, masterName, db: Number(db), username, password };
}

function credentials(userinfo: string | undefined): {
  username: string | undefined;
  password: string | undefined;
} {
  if (!userinfo) return { username: undefined, password: undefined };
  const colon = userinfo.indexOf(':');
  const user = colon < 0 ? userinfo : userinfo.slice(0, colon);
  const pass = colon < 0 ? '' : userinfo.slice(colon + 1);
  try {
    return {
      username: user ? decodeURIComponent(user) : undefined,
      password: pass ? decodeURIComponent(pass) : undefined,
    };
  } catch {
    throw new Error('the user name or password is not valid percent-encoding');
  }
}

function parseNode(entry: string, defaultPort: number): RedisNode {
  // `[::1]:7000`, `host:7000`, or a host alone (the default port).
  const match = /^(?:\[([0-9a-f:.]+)\]|([A-Za-z0-9._-]+))(?::(\d+))?$/i.exec(entry);
  if (!match) throw new Error(`"${entry}" is not host:port`);
  const port = match[3] === undefined ? defaultPort : Number(match[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`"${entry}": the port must be from 1 to 65535`);
  }
  return { host: match[1] ?? match[2], port };
}
