import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConfigValidationError,
  DEFAULT_GROUP_RATES,
  environmentWithDotEnv,
  loadConfig,
  mailDestination,
  parseGroupRates,
} from './config';

describe('loadConfig', () => {
  const cwd = () => mkdtempSync(join(tmpdir(), 'mw-config-'));

  it('applies the contract defaults with no environment at all', () => {
    const dir = cwd();
    const config = loadConfig({}, dir);
    expect(config).toMatchObject({
      role: 'all',
      port: 3000,
      host: '0.0.0.0',
      databaseUrl: 'postgresql://postgres@127.0.0.1:5432/mailwright',
      databaseDirectUrl: 'postgresql://postgres@127.0.0.1:5432/mailwright',
      databaseReadUrl: null,
      databasePreparedStatements: true,
      databasePoolSize: 20,
      redisUrl: 'redis://127.0.0.1:6379',
      queuePrefix: 'mailwright',
      publicUrl: 'http://localhost:3000',
      smtpUrl: null,
      mailOutboxDir: join(dir, 'var/outbox'),
      emailRatePerSecond: 14,
      apiRateLimitPerMinute: 1000,
      apiStatementTimeoutMs: 10_000,
      backgroundStatementTimeoutMs: 300_000,
      dnsServers: [],
      logLevel: 'info',
    });
    expect(config.appSecret).toHaveLength(64);
    expect(readFileSync(join(dir, 'var/app-secret'), 'utf8').trim()).toBe(config.appSecret);
    expect(loadConfig({}, dir).appSecret).toBe(config.appSecret);
  });

  it('reads DELIVERY_GROUP_RATES: the contract defaults, overrides by group, decimals', () => {
    const dir = cwd();
    expect(loadConfig({}, dir).deliveryGroupRates).toEqual({
      google: 10,
      microsoft: 10,
      yahoo: 5,
      apple: 5,
      other: 20,
    });
    expect(loadConfig({}, dir).deliveryPacingRecoveryMs).toBe(60_000);
    expect(
      loadConfig({ DELIVERY_GROUP_RATES: ' google = 50, other=0.5 ,Apple=1' }, dir)
        .deliveryGroupRates,
    ).toEqual({ google: 50, microsoft: 10, yahoo: 5, apple: 1, other: 0.5 });
  });

  it('refuses a bad DELIVERY_GROUP_RATES at boot, naming what is wrong', () => {
    for (const raw of [
      'gmail=10',
      'google=10,google=20',
      'google=fast',
      'google=0',
      'google=0.05',
      'google=-1',
      'google',
      'google=10;other=5',
      'google=2000000',
    ]) {
      const problems: string[] = [];
      expect(parseGroupRates(problems, raw)).toEqual(DEFAULT_GROUP_RATES);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^DELIVERY_GROUP_RATES: /);
      expect(() => loadConfig({ DELIVERY_GROUP_RATES: raw }, cwd())).toThrow(ConfigValidationError);
    }
    expect(() => loadConfig({ DELIVERY_PACING_RECOVERY_MS: '5' }, cwd())).toThrow(
      /DELIVERY_PACING_RECOVERY_MS/,
    );
  });

  it('names every bad variable at once', () => {
    let error: unknown;
    try {
      loadConfig(
        { PORT: 'eighty', APP_ROLE: 'boss', REDIS_URL: 'http://x', DNS_SERVERS: 'a:99999' },
        cwd(),
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigValidationError);
    const problems = (error as ConfigValidationError).problems.join('\n');
    expect(problems).toMatch(/PORT/);
    expect(problems).toMatch(/APP_ROLE/);
    expect(problems).toMatch(/REDIS_URL/);
    expect(problems).toMatch(/DNS_SERVERS/);
  });

  it('requires APP_SECRET in production and never writes one there', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' }, cwd())).toThrow(/APP_SECRET/);
  });

  it('derives PUBLIC_URL from PORT and strips a trailing slash when given', () => {
    expect(loadConfig({ PORT: '8080' }, cwd()).publicUrl).toBe('http://localhost:8080');
    expect(loadConfig({ PUBLIC_URL: 'https://mail.example.com/' }, cwd()).publicUrl).toBe(
      'https://mail.example.com',
    );
  });

  it('requires verified senders by default only when mail leaves by SMTP', () => {
    const dir = cwd();
    expect(loadConfig({}, dir).requireVerifiedSender).toBe(false);
    expect(loadConfig({ SMTP_URL: 'smtp://mail.example.com:587' }, dir).requireVerifiedSender).toBe(
      true,
    );
    expect(loadConfig({ REQUIRE_VERIFIED_SENDER: 'true' }, dir).requireVerifiedSender).toBe(true);
    expect(
      loadConfig({ SMTP_URL: 'smtp://mail.example.com', REQUIRE_VERIFIED_SENDER: 'false' }, dir)
        .requireVerifiedSender,
    ).toBe(false);
    expect(() => loadConfig({ REQUIRE_VERIFIED_SENDER: 'maybe' }, dir)).toThrow(
      /REQUIRE_VERIFIED_SENDER/,
    );
    // An api-only process cannot see the workers' SMTP_URL: strict unless told otherwise.
    expect(loadConfig({ APP_ROLE: 'api' }, dir).requireVerifiedSender).toBe(true);
    expect(
      loadConfig({ APP_ROLE: 'api', REQUIRE_VERIFIED_SENDER: 'false' }, dir).requireVerifiedSender,
    ).toBe(false);
    expect(loadConfig({ APP_ROLE: 'worker' }, dir).requireVerifiedSender).toBe(false);
  });

  it('reads CORS_ORIGINS as origins and refuses paths and wildcards', () => {
    const dir = cwd();
    expect(
      loadConfig({ CORS_ORIGINS: 'https://app.example.com, http://localhost:5173/' }, dir)
        .corsOrigins,
    ).toEqual(['https://app.example.com', 'http://localhost:5173']);
    expect(loadConfig({}, dir).corsOrigins).toEqual([]);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example.com/path' }, dir)).toThrow(
      /CORS_ORIGINS/,
    );
    expect(() => loadConfig({ CORS_ORIGINS: '*' }, dir)).toThrow(/CORS_ORIGINS/);
  });

  it('reads TRUST_PROXY as a hop count or a list of proxies, never "trust the whole chain"', () => {
    const trust = (value: string) =>
      loadConfig({ TRUST_PROXY: value, APP_SECRET: 'x'.repeat(32) }, cwd()).trustProxy;
    expect(loadConfig({ APP_SECRET: 'x'.repeat(32) }, cwd()).trustProxy).toBe(false);
    expect(trust('false')).toBe(false);
    expect(trust('true')).toBe(1);
    expect(trust('2')).toBe(2);
    expect(trust('10.0.0.1, 10.1.0.0/16,::1')).toEqual(['10.0.0.1', '10.1.0.0/16', '::1']);
    for (const bad of ['maybe', '10.0.0.1/33', 'proxy.local', '101']) {
      expect(() => trust(bad)).toThrow(/TRUST_PROXY/);
    }
  });

  it('gives public keys a budget of their own (PUBLIC_RATE_LIMIT_PER_MINUTE, default 600)', () => {
    expect(loadConfig({ APP_SECRET: 'x'.repeat(32) }, cwd()).publicRateLimitPerMinute).toBe(600);
    expect(
      loadConfig({ APP_SECRET: 'x'.repeat(32), PUBLIC_RATE_LIMIT_PER_MINUTE: '50' }, cwd())
        .publicRateLimitPerMinute,
    ).toBe(50);
  });

  it('reads EVENT_RETENTION_DAYS and EMAIL_RETENTION_DAYS: unset keeps everything, at least 30', () => {
    const env = { APP_SECRET: 'x'.repeat(32) };
    expect(loadConfig(env, cwd())).toMatchObject({
      eventRetentionDays: null,
      emailRetentionDays: null,
    });
    expect(
      loadConfig({ ...env, EVENT_RETENTION_DAYS: '30', EMAIL_RETENTION_DAYS: '400' }, cwd()),
    ).toMatchObject({ eventRetentionDays: 30, emailRetentionDays: 400 });
    for (const [name, bad] of [
      ['EVENT_RETENTION_DAYS', '29'],
      ['EMAIL_RETENTION_DAYS', '0'],
      ['EMAIL_RETENTION_DAYS', 'a year'],
    ]) {
      expect(() => loadConfig({ ...env, [name]: bad }, cwd())).toThrow(
        new RegExp(`${name}: expected an integer from 30`),
      );
    }
  });

  it('names where mail goes without the SMTP credentials', () => {
    const dir = cwd();
    expect(
      mailDestination(loadConfig({ SMTP_URL: 'smtps://user:hunter2@smtp.example.com:465' }, dir)),
    ).toBe('smtps smtp.example.com:465');
    expect(mailDestination(loadConfig({}, dir))).toBe(`outbox ${join(dir, 'var/outbox')}`);
  });

  it('reads .env under the real environment', () => {
    const dir = cwd();
    writeFileSync(
      join(dir, '.env'),
      'PORT=4100\nLOG_LEVEL=debug\n# a comment\nQUEUE_PREFIX="quoted"\n',
    );
    const env = environmentWithDotEnv({ PORT: '4200' }, dir);
    expect(env).toMatchObject({ PORT: '4200', LOG_LEVEL: 'debug', QUEUE_PREFIX: 'quoted' });
    expect(loadConfig(env, dir)).toMatchObject({
      port: 4200,
      logLevel: 'debug',
      queuePrefix: 'quoted',
    });
    expect(environmentWithDotEnv({ PORT: '1' }, cwd())).toEqual({ PORT: '1' });
  });

  it('reads the return path and inbound listener settings (contract: "Bounces and complaints")', () => {
    const base = { APP_SECRET: 'x'.repeat(32) };
    const defaults = loadConfig(
      { ...base, PUBLIC_URL: 'https://Mail.Example.com', HOST: '127.0.0.1' },
      cwd(),
    );
    expect(defaults.returnPathDomain).toBe('bounces.mail.example.com');
    expect(defaults.inboundSmtpPort).toBeNull();
    expect(defaults.inboundSmtpHost).toBe('127.0.0.1');
    expect(defaults.inboundLmtp).toBe(false);
    expect(defaults.inboundMaxBytes).toBe(10 * 1024 * 1024);
    const set = loadConfig(
      {
        ...base,
        RETURN_PATH_DOMAIN: 'rp.example.org',
        INBOUND_SMTP_PORT: '2526',
        INBOUND_LMTP: 'true',
      },
      cwd(),
    );
    expect([set.returnPathDomain, set.inboundSmtpPort, set.inboundLmtp]).toEqual([
      'rp.example.org',
      2526,
      true,
    ]);
    expect(() => loadConfig({ ...base, RETURN_PATH_DOMAIN: 'not a domain' }, cwd())).toThrow(
      /RETURN_PATH_DOMAIN/,
    );
  });

  it('reads the CNAME target of tracking domains (contract: "Tracking domain")', () => {
    const base = { APP_SECRET: 'x'.repeat(32) };
    expect(
      loadConfig({ ...base, PUBLIC_URL: 'https://Mail.Example.com:8443/x' }, cwd())
        .trackingCnameTarget,
    ).toBe('mail.example.com');
    expect(
      loadConfig({ ...base, PUBLIC_URL: 'http://127.0.0.1:3000' }, cwd()).trackingCnameTarget,
    ).toBe('127.0.0.1');
    expect(
      loadConfig({ ...base, TRACKING_CNAME_TARGET: 'Edge.Example.NET' }, cwd()).trackingCnameTarget,
    ).toBe('edge.example.net');
    expect(() =>
      loadConfig({ ...base, TRACKING_CNAME_TARGET: 'https://edge.example.net' }, cwd()),
    ).toThrow(/TRACKING_CNAME_TARGET/);
  });
});
