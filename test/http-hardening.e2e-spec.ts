import { connect } from 'node:net';
import { appsOnOneDatabase, TestApp } from './support/test-app';

/** Opens a connection, writes `head` and nothing more; answers what the server sent before it closed. */
function trickle(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head));
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('close', () => resolve(received));
    // Without the server's timeout the connection would stay open for minutes: give up first.
    socket.setTimeout(15_000, () => socket.destroy());
    socket.on('error', reject);
  });
}

describe('HTTP hardening (e2e)', () => {
  const apps = appsOnOneDatabase('mwt_http');
  beforeAll(() => apps.open());
  afterAll(() => apps.close());
  const start = (env: Record<string, string>): Promise<TestApp> => apps.start(env);

  it('every response says nosniff and refuses framing; HSTS only under an https PUBLIC_URL', async () => {
    const plain = await start({});
    for (const url of ['/health/ready', '/v1/nothing-here', '/project']) {
      const res = await plain.request({ method: 'GET', url });
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['strict-transport-security']).toBeUndefined();
    }
    const secure = await start({ PUBLIC_URL: 'https://mail.example.com' });
    const res = await secure.request({ method: 'GET', url: '/health/ready' });
    expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
    // The open-tracking pixel is loaded by mail readers from other origins.
    expect(res.headers['cross-origin-resource-policy']).toBeUndefined();
  });

  it('a request whose body does not arrive within REQUEST_TIMEOUT_MS gets 408 and its connection is closed', async () => {
    const app = await start({ REQUEST_TIMEOUT_MS: '1000' });
    await app.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.app.getHttpServer().address() as { port: number }).port;
    const answer = await trickle(
      port,
      'POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"em',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    const slowHeaders = await trickle(port, 'GET /health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    expect(slowHeaders).toMatch(/^HTTP\/1\.1 408|^$/);
  });
});
