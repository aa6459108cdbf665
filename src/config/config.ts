import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { parseRedisUrl, RedisTarget } from './redis-url';

const PG_PROTOCOLS = ['postgres:', 'postgresql:'];

export type AppRole = 'all' | 'api' | 'worker';
const ROLES: readonly AppRole[] = ['all', 'api', 'worker'];
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const HOST_NAME =
  /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Mailbox provider groups, each paced at a rate of its own (contract: "Pacing per mailbox provider"). */
export const PROVIDER_GROUPS = ['google', 'microsoft', 'yahoo', 'apple', 'other'] as const;
export type ProviderGroup = (typeof PROVIDER_GROUPS)[number];
export type GroupRates = Record<ProviderGroup, number>;
export const DEFAULT_GROUP_RATES: Readonly<GroupRates> = {
  google: 10,
  microsoft: 10,
  yahoo: 5,
  apple: 5,
  other: 20,
};
/** The floor of a slowed group: one message per 10 s. */
export const MIN_GROUP_RATE = 0.1;

/**
 * The whole runtime configuration, validated once at boot. Nothing else in the
 * code base reads process.env: it asks for an AppConfig.
 */
export interface AppConfig {
  nodeEnv: string;
  role: AppRole;
  port: number;
  host: string;
  databaseUrl: string;
  /**
   * A direct (unpooled) connection for what needs a session: migrations under their advisory lock,
   * LISTEN (DATABASE_DIRECT_URL; default DATABASE_URL).
   */
  databaseDirectUrl: string;
  /** Where reads that tolerate lag go (DATABASE_READ_URL); null: the primary (docs/scaling.md). */
  databaseReadUrl: string | null;
  /** Whether named prepared statements may be used (DATABASE_PREPARED_STATEMENTS). */
  databasePreparedStatements: boolean;
  /** Connections of each pool of this process (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  redisUrl: string;
  /** REDIS_URL read: a single server, a Redis Cluster or a Sentinel deployment. */
  redis: RedisTarget;
  queuePrefix: string;
  publicUrl: string;
  smtpUrl: string | null;
  mailOutboxDir: string;
  emailRatePerSecond: number;
  /**
   * Messages per second per provider group across all workers (DELIVERY_GROUP_RATES); groups not
   * named keep their default. EMAIL_RATE_PER_SECOND still caps the sum.
   */
  deliveryGroupRates: GroupRates;
  /**
   * Quiet period after a group's last deferral before its rate grows back, and the time each tenth
   * of the configured rate then takes (DELIVERY_PACING_RECOVERY_MS, default one minute).
   */
  deliveryPacingRecoveryMs: number;
  /** Delivery attempts per email before it is FAILED (transient SMTP errors only). */
  deliveryAttempts: number;
  /** Base of the exponential delivery backoff in ms: attempt n waits base * 2^(n-1). */
  deliveryBackoffMs: number;
  apiRateLimitPerMinute: number;
  /** Requests per project per minute made with its public (pk_) keys, a budget of their own. */
  publicRateLimitPerMinute: number;
  /**
   * Milliseconds of segment evaluation over a whole project (previews, counts, member pages) one
   * project may spend in a burst; refilled at the same amount a minute (EXPENSIVE_WORK_BUDGET_MS).
   */
  expensiveWorkBudgetMs: number;
  /** Webhook endpoints one project may have (MAX_WEBHOOK_ENDPOINTS). */
  maxWebhookEndpoints: number;
  /** Wall-clock budget of one render of a message or preview, in ms. */
  renderTimeoutMs: number;
  /** A request's headers and body must arrive within this many ms (408 otherwise). */
  requestTimeoutMs: number;
  /** Postgres statement_timeout of statements run for an API request (503 TIMEOUT past it). */
  apiStatementTimeoutMs: number;
  /** Postgres statement_timeout of every other statement (jobs, recoveries, schedulers, the CLI); 0: none. */
  backgroundStatementTimeoutMs: number;
  /** Contacts per chunk of a bulk import: one transaction and one resume point each. */
  importBatchSize: number;
  /** Interval of the delivery and import recovery schedulers (queue/recovery.ts). */
  recoveryEveryMs: number;
  /** Months of `events` older than this many days are dropped (EVENT_RETENTION_DAYS); null: kept. */
  eventRetentionDays: number | null;
  /** Months of `emails` older than this many days are dropped (EMAIL_RETENTION_DAYS); null: kept. */
  emailRetentionDays: number | null;
  authFailureLimitPerMinute: number;
  dnsServers: string[];
  appSecret: string;
  /** Earlier secrets (APP_SECRET_PREVIOUS): open sealed keys and verify links made before a rotation. */
  appSecretPrevious: string[];
  /** Whether a sender must be on a verified domain of the project (default: only when mail leaves by SMTP). */
  requireVerifiedSender: boolean;
  /** Origins allowed to call secret-key endpoints from a browser (POST /v1/track and POST /v1/subscribe allow any). */
  corsOrigins: string[];
  logLevel: LogLevel;
  /**
   * Which X-Forwarded-For entries to believe: false (the socket address is the client), a hop count
   * (the client is that many entries from the right), or the proxies' addresses/CIDRs.
   */
  trustProxy: false | number | string[];
  webhookAllowPrivate: boolean;
  /** Waits before each retry of an outbound webhook delivery (WEBHOOK_RETRY_DELAYS_MS); its length + 1 is the attempt count. */
  webhookRetryDelaysMs: number[];
  /** Waits before each retry of a workflow WEBHOOK step (WORKFLOW_RETRY_DELAYS_MS); 5 attempts in all by default. */
  workflowRetryDelaysMs: number[];
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** A worker-only process (APP_ROLE=worker) serves GET /metrics on this port when set (WORKER_METRICS_PORT). */
  workerMetricsPort: number | null;
  /** When set, the queue dashboard is served at /admin/queues behind it; unset, it is off. */
  adminToken: string | null;
  /** Domain of return paths whose sending domain has no verified `bounces.` CNAME (RETURN_PATH_DOMAIN). */
  returnPathDomain: string;
  /** The CNAME target of tracking domains (TRACKING_CNAME_TARGET; default the host of PUBLIC_URL). */
  trackingCnameTarget: string;
  /** Port of the inbound SMTP/LMTP listener for bounces and complaints; null: no listener. */
  inboundSmtpPort: number | null;
  inboundSmtpHost: string;
  /** Speak LMTP instead of SMTP (a Postfix in front). */
  inboundLmtp: boolean;
  /** Largest inbound message accepted (552 beyond). */
  inboundMaxBytes: number;
  /**
   * Hosts SNS certificate and subscribe URLs may be on (SES_SNS_HOST_PATTERN): `*` stands for one
   * DNS label; comma-separated patterns.
   */
  sesSnsHostPatterns: string[];
  /** Let SNS certificate and subscribe URLs be plain http (SES_SNS_ALLOW_HTTP; for tests on loopback). */
  sesSnsAllowHttp: boolean;
}

export class ConfigValidationError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigValidationError';
  }
}

type Env = Record<string, string | undefined>;

export const DEFAULT_QUEUE_PREFIX = 'mailwright';
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** Reads one variable; empty strings count as unset so `FOO=` falls back to the default. */
function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  string(name: string, fallback: string): string {
    return read(this.env, name) ?? fallback;
  }

  optional(name: string): string | null {
    return read(this.env, name) ?? null;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = read(this.env, name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      this.problems.push(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return Number(raw);
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = read(this.env, name);
    if (raw === undefined) return fallback;
    if (/^(true|1|yes)$/i.test(raw)) return true;
    if (/^(false|0|no)$/i.test(raw)) return false;
    this.problems.push(`${name}: expected true or false, got "${raw}"`);
    return fallback;
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const raw = read(this.env, name);
    if (raw === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      this.problems.push(`${name}: expected one of ${allowed.join(', ')}, got "${raw}"`);
      return fallback;
    }
    return raw as T;
  }

  url(name: string, fallback: string | null, protocols: string[]): string | null {
    const raw = read(this.env, name) ?? fallback;
    if (raw === null) return null;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) {
        this.problems.push(
          `${name}: expected a ${protocols.join(' or ')} URL, got "${parsed.protocol}"`,
        );
      }
    } catch {
      this.problems.push(`${name}: not a valid URL`);
    }
    return raw;
  }
}

function readRedisTarget(r: Reader): RedisTarget {
  const raw = r.string('REDIS_URL', DEFAULT_REDIS_URL);
  try {
    return parseRedisUrl(raw);
  } catch (error) {
    r.problems.push(`REDIS_URL: ${(error as Error).message}`);
    return { kind: 'standalone', url: DEFAULT_REDIS_URL };
  }
}

function parseList(raw: string | null): string[] {
  if (raw === null) return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Origins as browsers send them: scheme://host[:port], no path; "*" is not accepted (list them). */
function parseCorsOrigins(reader: Reader, raw: string | null): string[] {
  const origins = parseList(raw);
  return origins.map((origin) => {
    try {
      const url = new URL(origin);
      if (
        (url.protocol === 'http:' || url.protocol === 'https:') &&
        url.origin === origin.replace(/\/+$/, '')
      )
        return url.origin;
    } catch {
      // reported below
    }
    reader.problems.push(
      `CORS_ORIGINS: "${origin}" is not an origin such as https://app.example.com`,
    );
    return origin;
  });
}

/**
 * TRUST_PROXY: `true` means one proxy, never "believe the whole chain": a client would then pick
 * its own address (the leftmost entry) and dodge or aim the failed-authentication limit.
 */
function parseTrustProxy(reader: Reader, raw: string | null): false | number | string[] {
  if (raw === null || /^(false|0|no)$/i.test(raw)) return false;
  if (/^(true|yes)$/i.test(raw)) return 1;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops <= 100) return hops;
  } else {
    const proxies = parseList(raw);
    if (proxies.every(isAddressOrCidr)) return proxies;
  }
  reader.problems.push(
    `TRUST_PROXY: expected false, true, a number of proxies (1..100) or a comma list of proxy addresses/CIDRs, got "${raw}"`,
  );
  return false;
}

function isAddressOrCidr(value: string): boolean {
  const [address, bits, ...rest] = value.split('/');
  if (rest.length > 0 || isIP(address) === 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (isIP(address) === 4 ? 32 : 128);
}

function parseDnsServers(reader: Reader, raw: string | null): string[] {
  const servers = parseList(raw);
  for (const server of servers) {
    const match = /^(\[[0-9a-fA-F:]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(server);
    if (!match || (match[2] !== undefined && Number(match[2]) > 65535)) {
      reader.problems.push(`DNS_SERVERS: "${server}" is not host[:port]`);
    }
  }
  return servers;
}

/**
 * APP_SECRET encrypts DKIM keys and signs links. Outside production a missing
 * secret is generated once into ./var/app-secret so restarts keep old links valid.
 */
function resolveAppSecret(reader: Reader, nodeEnv: string, secretFile: string): string {
  const given = reader.optional('APP_SECRET');
  if (given !== null) {
    if (given.length < 32) reader.problems.push('APP_SECRET: must be at least 32 characters');
    return given;
  }
  if (nodeEnv === 'production') {
    reader.problems.push('APP_SECRET: required when NODE_ENV=production');
    return '';
  }
  if (existsSync(secretFile)) {
    const stored = readFileSync(secretFile, 'utf8').trim();
    if (stored.length >= 32) return stored;
  }
  const generated = randomBytes(32).toString('hex');
  mkdirSync(dirname(secretFile), { recursive: true });
  writeFileSync(secretFile, `${generated}\n`, { mode: 0o600 });
  chmodSync(secretFile, 0o600);
  return generated;
}

export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): AppConfig {
  const r = new Reader(env);
  const nodeEnv = r.string('NODE_ENV', 'development');
  const port = r.int('PORT', 3000, 1, 65535);
  const smtpUrl = r.url('SMTP_URL', null, ['smtp:', 'smtps:']);
  const role = r.oneOf('APP_ROLE', 'all', ROLES);
  const databaseUrl =
    r.url('DATABASE_URL', 'postgresql://postgres@127.0.0.1:5432/mailwright', PG_PROTOCOLS) ?? '';
  const config: AppConfig = {
    nodeEnv,
    role,
    port,
    host: r.string('HOST', '0.0.0.0'),
    databaseUrl,
    databaseDirectUrl: r.url('DATABASE_DIRECT_URL', databaseUrl, PG_PROTOCOLS) ?? databaseUrl,
    databaseReadUrl: r.url('DATABASE_READ_URL', null, PG_PROTOCOLS),
    databasePreparedStatements: r.bool('DATABASE_PREPARED_STATEMENTS', true),
    databasePoolSize: r.int('DATABASE_POOL_SIZE', 20, 1, 1000),
    redisUrl: r.string('REDIS_URL', DEFAULT_REDIS_URL),
    redis: readRedisTarget(r),
    queuePrefix: r.string('QUEUE_PREFIX', DEFAULT_QUEUE_PREFIX),
    publicUrl: (r.url('PUBLIC_URL', `http://localhost:${port}`, ['http:', 'https:']) ?? '').replace(
      /\/+$/,
      '',
    ),
    smtpUrl,
    mailOutboxDir: resolve(cwd, r.string('MAIL_OUTBOX_DIR', './var/outbox')),
    emailRatePerSecond: r.int('EMAIL_RATE_PER_SECOND', 14, 1, 1_000_000),
    deliveryGroupRates: parseGroupRates(r.problems, r.optional('DELIVERY_GROUP_RATES')),
    deliveryPacingRecoveryMs: r.int('DELIVERY_PACING_RECOVERY_MS', 60_000, 100, 24 * 3_600_000),
    deliveryAttempts: r.int('DELIVERY_ATTEMPTS', 8, 1, 100),
    deliveryBackoffMs: r.int('DELIVERY_BACKOFF_MS', 15_000, 1, 3_600_000),
    apiRateLimitPerMinute: r.int('API_RATE_LIMIT_PER_MINUTE', 1000, 1, 10_000_000),
    publicRateLimitPerMinute: r.int('PUBLIC_RATE_LIMIT_PER_MINUTE', 600, 1, 10_000_000),
    requestTimeoutMs: r.int('REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    renderTimeoutMs: r.int('RENDER_TIMEOUT_MS', 2000, 50, 600_000),
    apiStatementTimeoutMs: r.int('API_STATEMENT_TIMEOUT_MS', 10_000, 10, 3_600_000),
    backgroundStatementTimeoutMs: r.int(
      'BACKGROUND_STATEMENT_TIMEOUT_MS',
      300_000,
      0,
      24 * 3_600_000,
    ),
    maxWebhookEndpoints: r.int('MAX_WEBHOOK_ENDPOINTS', 20, 1, 10_000),
    expensiveWorkBudgetMs: r.int('EXPENSIVE_WORK_BUDGET_MS', 10_000, 1, 3_600_000),
    returnPathDomain: '',
    trackingCnameTarget: '',
    inboundSmtpPort: r.optional('INBOUND_SMTP_PORT')
      ? r.int('INBOUND_SMTP_PORT', 2525, 1, 65535)
      : null,
    inboundSmtpHost: '',
    inboundLmtp: r.bool('INBOUND_LMTP', false),
    inboundMaxBytes: r.int('INBOUND_MAX_BYTES', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    sesSnsHostPatterns: parseList(r.string('SES_SNS_HOST_PATTERN', 'sns.*.amazonaws.com')).map(
      (pattern) => pattern.toLowerCase(),
    ),
    sesSnsAllowHttp: r.bool('SES_SNS_ALLOW_HTTP', false),
    importBatchSize: r.int('IMPORT_BATCH_SIZE', 1000, 1, 10_000),
    recoveryEveryMs: r.int('RECOVERY_EVERY_MS', 60_000, 100, 24 * 3_600_000),
    // Unset keeps everything; when set, at least 30 days (the contract's floor).
    eventRetentionDays: r.optional('EVENT_RETENTION_DAYS')
      ? r.int('EVENT_RETENTION_DAYS', 0, 30, 100_000)
      : null,
    emailRetentionDays: r.optional('EMAIL_RETENTION_DAYS')
      ? r.int('EMAIL_RETENTION_DAYS', 0, 30, 100_000)
      : null,
    authFailureLimitPerMinute: r.int('AUTH_FAILURE_LIMIT_PER_MINUTE', 30, 1, 10_000_000),
    dnsServers: parseDnsServers(r, r.optional('DNS_SERVERS')),
    appSecret: '',
    appSecretPrevious: parseList(r.optional('APP_SECRET_PREVIOUS')),
    // An api-only process sends nothing, so its SMTP_URL says nothing about the workers': it
    // requires verified senders unless told otherwise, or it would accept mail they then fail.
    requireVerifiedSender: r.bool('REQUIRE_VERIFIED_SENDER', smtpUrl !== null || role === 'api'),
    corsOrigins: parseCorsOrigins(r, r.optional('CORS_ORIGINS')),
    logLevel: r.oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    trustProxy: parseTrustProxy(r, r.optional('TRUST_PROXY')),
    webhookAllowPrivate: r.bool('WEBHOOK_ALLOW_PRIVATE', false),
    webhookRetryDelaysMs: parseDelays(r, r.optional('WEBHOOK_RETRY_DELAYS_MS')),
    workflowRetryDelaysMs: parseDelays(
      r,
      r.optional('WORKFLOW_RETRY_DELAYS_MS'),
      'WORKFLOW_RETRY_DELAYS_MS',
      DEFAULT_WORKFLOW_RETRY_DELAYS_MS,
    ),
    metricsToken: r.optional('METRICS_TOKEN') || null,
    workerMetricsPort: r.optional('WORKER_METRICS_PORT')
      ? r.int('WORKER_METRICS_PORT', 9464, 1, 65535)
      : null,
    adminToken: r.optional('ADMIN_TOKEN') || null,
  };
  config.inboundSmtpHost = r.string('INBOUND_SMTP_HOST', config.host);
  config.returnPathDomain = r
    .string('RETURN_PATH_DOMAIN', `bounces.${new URL(config.publicUrl).hostname}`)
    .toLowerCase();
  if (!HOST_NAME.test(config.returnPathDomain)) {
    r.problems.push(`RETURN_PATH_DOMAIN: expected a domain name, got "${config.returnPathDomain}"`);
  }
  config.trackingCnameTarget = r
    .string('TRACKING_CNAME_TARGET', new URL(config.publicUrl).hostname)
    .toLowerCase();
  // Checked when set: the default is whatever host PUBLIC_URL has (an address in a local setup).
  if (r.optional('TRACKING_CNAME_TARGET') && !HOST_NAME.test(config.trackingCnameTarget)) {
    r.problems.push(
      `TRACKING_CNAME_TARGET: expected a host name, got "${config.trackingCnameTarget}"`,
    );
  }
  for (const pattern of config.sesSnsHostPatterns) {
    if (
      !/^(\*|[a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.(\*|[a-z0-9]([a-z0-9-]*[a-z0-9])?))*$/.test(pattern)
    )
      r.problems.push(
        `SES_SNS_HOST_PATTERN: "${pattern}" is not a host name with "*" for whole labels`,
      );
  }
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(config.queuePrefix)) {
    r.problems.push('QUEUE_PREFIX: 1..64 characters of letters, digits, "_" or "-"');
  }
  for (const previous of config.appSecretPrevious) {
    if (previous.length < 32)
      r.problems.push('APP_SECRET_PREVIOUS: every secret must be at least 32 characters');
  }
  for (const [name, token] of [
    ['METRICS_TOKEN', config.metricsToken],
    ['ADMIN_TOKEN', config.adminToken],
  ] as const) {
    if (token !== null && token.length < 16) r.problems.push(`${name}: at least 16 characters`);
  }
  if (r.problems.length === 0) {
    config.appSecret = resolveAppSecret(r, nodeEnv, resolve(cwd, 'var/app-secret'));
    config.appSecretPrevious = config.appSecretPrevious.filter(
      (previous) => previous !== config.appSecret,
    );
  }
  if (r.problems.length > 0) throw new ConfigValidationError(r.problems);
  return config;
}

/**
 * DELIVERY_GROUP_RATES: `group=rate` pairs, comma-separated, rates in messages per second (decimals
 * allowed, from one per 10 s up to 1,000,000); unnamed groups keep their default. Problems are
 * pushed to `problems` (unknown or repeated group, bad rate) and the defaults returned.
 */
export function parseGroupRates(problems: string[], raw: string | null | undefined): GroupRates {
  const rates: GroupRates = { ...DEFAULT_GROUP_RATES };
  if (raw === undefined || raw === null || raw.trim() === '') return rates;
  const seen = new Set<string>();
  const bad: string[] = [];
  for (const pair of raw.split(',')) {
    const match = /^\s*([a-z]+)\s*=\s*(\d+(?:\.\d+)?)\s*$/i.exec(pair);
    const group = match?.[1].toLowerCase();
    const rate = Number(match?.[2]);
    if (
      !match ||
      !(PROVIDER_GROUPS as readonly string[]).includes(group as string) ||
      seen.has(group as string) ||
      rate < MIN_GROUP_RATE ||
      rate > 1_000_000
    ) {
      bad.push(pair.trim());
      continue;
    }
    seen.add(group as string);
    rates[group as ProviderGroup] = rate;
  }
  if (bad.length === 0) return rates;
  problems.push(
    `DELIVERY_GROUP_RATES: expected comma-separated group=rate pairs (groups ${PROVIDER_GROUPS.join(', ')}, each once; rates ${MIN_GROUP_RATE}..1000000 messages per second), got "${bad.join('", "')}"`,
  );
  return { ...DEFAULT_GROUP_RATES };
}

/** The contract's retry schedule of outbound webhooks: 5 s, 1 min, 10 min, 1 h, 6 h, 24 h. */
export const DEFAULT_WEBHOOK_RETRY_DELAYS_MS = [
  5_000, 60_000, 600_000, 3_600_000, 21_600_000, 86_400_000,
];
/** A WEBHOOK step: 5 attempts, backing off from 10 s to 10 minutes. */
export const DEFAULT_WORKFLOW_RETRY_DELAYS_MS = [10_000, 60_000, 300_000, 600_000];

function parseDelays(
  r: { problems: string[] },
  raw: string | null | undefined,
  name = 'WEBHOOK_RETRY_DELAYS_MS',
  fallback = DEFAULT_WEBHOOK_RETRY_DELAYS_MS,
): number[] {
  if (raw === undefined || raw === null || raw.trim() === '') return fallback;
  const delays = raw.split(',').map((part) => Number(part.trim()));
  if (
    delays.length > 20 ||
    delays.some((d) => !Number.isInteger(d) || d < 1 || d > 7 * 86_400_000)
  ) {
    r.problems.push(`${name}: up to 20 comma-separated waits in milliseconds, each 1..604800000`);
    return fallback;
  }
  return delays;
}

/**
 * The process environment over the variables of `<cwd>/.env`, when that file
 * exists: the real environment wins, as with every dotenv loader.
 */
export function environmentWithDotEnv(env: Env = process.env, cwd: string = process.cwd()): Env {
  const file = resolve(cwd, '.env');
  if (!existsSync(file)) return env;
  let fromFile: Env;
  try {
    fromFile = parseEnv(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigValidationError([
      `.env: cannot be read (${error instanceof Error ? error.message : String(error)})`,
    ]);
  }
  return { ...fromFile, ...env };
}

/** Where mail goes, for the startup line: the outbox folder or the SMTP host, never credentials. */
export function mailDestination(config: AppConfig): string {
  if (!config.smtpUrl) return `outbox ${config.mailOutboxDir}`;
  const url = new URL(config.smtpUrl);
  return `${url.protocol.replace(':', '')} ${url.hostname}${url.port ? `:${url.port}` : ''}`;
}

export function runsApi(config: AppConfig): boolean {
  return config.role === 'all' || config.role === 'api';
}

export function runsWorkers(config: AppConfig): boolean {
  return config.role === 'all' || config.role === 'worker';
}
