import { TestDnsServer } from './dns-server';
import { DomainBody, publishDomainRecords } from './domains';
import { freePort, runCli, ServiceProcess, startService, waitForHttp } from './processes';
import { LIFTED_GROUP_RATES, TEST_REDIS_URL } from './test-app';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * What the processes of one test deployment share: its database, Redis and queue prefix, the test
 * secret, warn-level logs (a worker logs at info: ServiceCluster waits for its "started" line) and
 * no API rate limit.
 */
export function deploymentEnv(databaseUrl: string, prefix: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: prefix,
    LOG_LEVEL: 'warn',
    APP_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    API_RATE_LIMIT_PER_MINUTE: '10000000',
  };
}

/**
 * What a deployment that sends mail adds: the loopback SMTP server, the loopback DNS server (the
 * API's domain verification and the workers' re-checks ask it), a public URL, an outbox and a
 * lifted email rate.
 */
export function mailEnv(
  smtp: { url: string },
  dns: { address: string },
  outboxDir: string,
): Record<string, string> {
  return {
    SMTP_URL: smtp.url,
    DNS_SERVERS: dns.address,
    PUBLIC_URL: 'https://mail.example.test',
    MAIL_OUTBOX_DIR: outboxDir,
    EMAIL_RATE_PER_SECOND: '1000',
  };
}

/**
 * API and worker processes of one deployment (`node dist/main.js` with
 * APP_ROLE=api or worker) sharing a test database and queue prefix, for the
 * restart and crash specs. `baseEnv` is read at each start (the database
 * exists only after beforeAll) and must hold DATABASE_URL, REDIS_URL,
 * QUEUE_PREFIX and APP_SECRET; `killAll` in afterEach leaves no process behind.
 */
export class ServiceCluster {
  private readonly running: ServiceProcess[] = [];

  constructor(
    private readonly baseEnv: () => Record<string, string>,
    private readonly cwd: string,
  ) {}

  /** An API process on a free loopback port, answered once /health/ready is 200. */
  async startApi(
    extra: Record<string, string> = {},
    timeoutMs = 30_000,
  ): Promise<{ proc: ServiceProcess; base: string }> {
    const port = await freePort();
    const proc = this.start({ APP_ROLE: 'api', HOST: '127.0.0.1', PORT: String(port), ...extra });
    const base = `http://127.0.0.1:${port}`;
    await waitForHttp(`${base}/health/ready`, timeoutMs);
    return { proc, base };
  }

  /** A worker process, answered once it logged that it started (its queue workers then run). */
  async startWorker(
    extra: Record<string, string> = {},
    timeoutMs = 30_000,
  ): Promise<ServiceProcess> {
    // The "started" line is logged at info.
    const proc = this.start({ APP_ROLE: 'worker', LOG_LEVEL: 'info', ...extra });
    const deadline = Date.now() + timeoutMs;
    while (!proc.output().includes('worker started')) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null || Date.now() > deadline) {
        throw new Error(`worker did not start: ${proc.output().slice(-2000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return proc;
  }

  /** Sends `signal` unless the process has already ended; answers its exit code or signal. */
  stop(proc: ServiceProcess, signal: NodeJS.Signals): Promise<number | string | null> {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
    return proc.exited;
  }

  /**
   * stop(), bounded: a process that has not ended within `timeoutMs` fails the
   * test with its last output (a hang at shutdown says where it hung).
   */
  async stopWithin(
    proc: ServiceProcess,
    signal: NodeJS.Signals,
    timeoutMs: number,
  ): Promise<number | string | null> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        this.stop(proc, signal),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new Error(
                  `process still running ${timeoutMs} ms after ${signal}: ${proc.output().slice(-4000)}`,
                ),
              ),
            timeoutMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILLs every process this cluster started that still runs. */
  async killAll(): Promise<void> {
    const procs = this.running.splice(0);
    await Promise.all(procs.map((proc) => this.stop(proc, 'SIGKILL')));
  }

  /** `projects create` through the built CLI: the project's id and secret key. */
  createProject(name: string): { id: string; secretKey: string } {
    const env = this.baseEnv();
    const res = runCli(['projects', 'create', '--name', name, '--json'], {
      DATABASE_URL: env.DATABASE_URL,
      REDIS_URL: env.REDIS_URL,
      QUEUE_PREFIX: env.QUEUE_PREFIX,
      APP_SECRET: env.APP_SECRET,
    });
    if (res.status !== 0) throw new Error(`projects create failed: ${res.stdout}${res.stderr}`);
    const doc = JSON.parse(res.stdout);
    return { id: doc.project.id, secretKey: doc.secretKey };
  }

  private start(env: Record<string, string>): ServiceProcess {
    // Pacing stays out of the way unless a spec sets DELIVERY_GROUP_RATES itself.
    const proc = startService(
      { DELIVERY_GROUP_RATES: LIFTED_GROUP_RATES, ...this.baseEnv(), ...env },
      this.cwd,
    );
    this.running.push(proc);
    return proc;
  }
}

/** One request with a bearer key; the body parsed as JSON (`{}` when empty). */
export async function callApi(
  base: string,
  key: string,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
}

/**
 * A VERIFIED sending domain through a running API process, as a user gets
 * one: POST /domains, publish its records on the test DNS server (the
 * processes run with DNS_SERVERS pointing at it), POST /domains/{id}/verify.
 */
export async function verifyDomainOverHttp(
  base: string,
  key: string,
  domain: string,
  dns: TestDnsServer,
): Promise<DomainBody> {
  const created = await callApi(base, key, 'POST', '/domains', { domain });
  if (created.status !== 201)
    throw new Error(`POST /domains answered ${created.status}: ${JSON.stringify(created.body)}`);
  publishDomainRecords(dns, created.body.data as DomainBody);
  const verified = await callApi(base, key, 'POST', `/domains/${created.body.data.id}/verify`);
  if (verified.status !== 200 || verified.body.data?.status !== 'VERIFIED') {
    throw new Error(
      `domain ${domain} did not verify: ${verified.status} ${JSON.stringify(verified.body)}`,
    );
  }
  return verified.body.data as DomainBody;
}
