import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigValidationError, loadConfig } from './config';

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
      redisUrl: 'redis://127.0.0.1:6379',
      queuePrefix: 'mailwright',
      publicUrl: 'http://localhost:3000',
      smtpUrl: null,
      mailOutboxDir: join(dir, 'var/outbox'),
      emailRatePerSecond: 14,
      apiRateLimitPerMinute: 1000,
      dnsServers: [],
      logLevel: 'info',
    });
    expect(config.appSecret).toHaveLength(64);
    expect(readFileSync(join(dir, 'var/app-secret'), 'utf8').trim()).toBe(config.appSecret);
    expect(loadConfig({}, dir).appSecret).toBe(config.appSecret);
  });

  it('names every bad variable at once', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', APP_ROLE: 'boss', REDIS_URL: 'http://x', DNS_SERVERS: 'a:99999' }, cwd());
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
});
