import { setupTestApp, TestApp } from './support/test-app';

/**
 * GET /metrics: Prometheus text format that a strict parser accepts, route
 * templates (never raw ids) as labels, queue and email gauges, and
 * METRICS_TOKEN protection.
 */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict reader of the Prometheus text exposition format 0.0.4: every line
 * is empty, a HELP, a TYPE or a sample; every sample belongs to a declared family;
 * label values are quoted with only \\, \" and \n escapes; values are numbers.
 */
function parsePrometheus(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const sampleRe = new RegExp(
    `^(${NAME})(\\{(.*)\\})? (-?[0-9.eE+-]+|NaN|\\+Inf|-Inf)( -?[0-9]+)?$`,
  );
  const labelRe = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/;
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    // The format ignores empty lines (prom-client separates families with them).
    if (line === '' || line.startsWith('# HELP ')) continue;
    if (line.startsWith('# TYPE ')) {
      const parts = line.split(' ');
      expect(parts).toHaveLength(4);
      const [, , name, type] = parts;
      expect(['counter', 'gauge', 'histogram', 'summary', 'untyped']).toContain(type);
      expect(types.has(name)).toBe(false);
      types.set(name, type);
      continue;
    }
    const match = sampleRe.exec(line);
    if (!match) throw new Error(`not a valid sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    let rest = match[3] ?? '';
    while (rest.length > 0) {
      const label = labelRe.exec(rest);
      if (!label) throw new Error(`bad labels in ${JSON.stringify(line)}`);
      labels[label[1]] = label[2];
      rest = rest.slice(label[0].length);
    }
    const family = match[1].replace(/_(bucket|sum|count|total)$/, '');
    if (!types.has(match[1]) && !types.has(family))
      throw new Error(`sample of an undeclared family: ${match[1]}`);
    samples.push({ name: match[1], labels, value: Number(match[4]) });
  }
  return { types, samples };
}

describe('GET /metrics (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;

  beforeAll(async () => {
    ctx = await setupTestApp({ METRICS_TOKEN: 'metrics-token-0123456789' });
    app = ctx.app;
  });

  afterAll(async () => {
    await ctx?.close();
  });

  it('needs the METRICS_TOKEN when one is set (401 otherwise, in the error envelope)', async () => {
    const none = await app.request({ method: 'GET', url: '/metrics' });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('MISSING_API_KEY');
    const wrong = await app.request({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer metrics-token-0123456780' },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('INVALID_API_KEY');
  });

  it('serves the contract series in a strictly valid text format, with route templates as labels', async () => {
    const project = await app.createProject('Metrics');
    const contact = await app.request({
      method: 'POST',
      url: '/contacts',
      key: project.secretKey,
      body: { email: 'm@example.org' },
    });
    await app.request({
      method: 'GET',
      url: `/contacts/${contact.body.data.id}`,
      key: project.secretKey,
    });
    await app.request({ method: 'GET', url: '/no/such/route', key: project.secretKey });
    await app.request({
      method: 'POST',
      url: '/v1/send',
      key: project.secretKey,
      body: { to: 'm@example.org', subject: 'x', body: 'y', from: 'a@b.test' },
    });
    const res = await app.request({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer metrics-token-0123456789' },
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const { types, samples } = parsePrometheus(res.raw);
    expect(types.get('mailwright_http_request_duration_seconds')).toBe('histogram');
    const routes = new Set(
      samples
        .filter((s) => s.name === 'mailwright_http_request_duration_seconds_count')
        .map((s) => `${s.labels.method} ${s.labels.route} ${s.labels.status}`),
    );
    expect(routes).toContain('GET /contacts/:id 200');
    expect(routes).toContain('POST /contacts 201');
    expect(routes).toContain('GET unmatched 404');
    // No raw id or unmatched path ever becomes a label.
    expect(res.raw).not.toContain(contact.body.data.id);
    expect(res.raw).not.toContain('/no/such/route');
    for (const queue of ['delivery', 'campaigns', 'webhooks', 'imports']) {
      expect(
        samples.some(
          (s) =>
            s.name === 'mailwright_queue_jobs' &&
            s.labels.queue === queue &&
            s.labels.state === 'waiting',
        ),
      ).toBe(true);
    }
    expect(
      samples.find((s) => s.name === 'mailwright_emails' && s.labels.source === 'TRANSACTIONAL')
        ?.value,
    ).toBeGreaterThanOrEqual(1);
    expect(types.get('mailwright_smtp_errors_total') ?? types.get('mailwright_smtp_errors')).toBe(
      'counter',
    );
    expect(types.get('mailwright_email_events_total') ?? types.get('mailwright_email_events')).toBe(
      'counter',
    );
    expect(
      samples.some(
        (s) => s.name === 'mailwright_email_events_total' && s.labels.event === 'email.queued',
      ),
    ).toBe(true);
    for (const family of [
      'mailwright_webhook_deliveries',
      'mailwright_campaigns',
      'mailwright_workflow_executions',
      'mailwright_process_resident_memory_bytes',
      'mailwright_nodejs_eventloop_lag_seconds',
    ]) {
      expect({ family, declared: types.has(family) }).toEqual({ family, declared: true });
    }
  });
});
