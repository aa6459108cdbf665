import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../../config/config';
import { createRootLogger, REQUEST_ID_LOG_LABEL, requestChildLogger } from './logger';

/** A root logger as the service builds it, writing its lines into `lines`. */
function capture(): { root: FastifyBaseLogger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const config = loadConfig(
    { APP_SECRET: 'logger-spec-'.padEnd(48, 'x'), LOG_LEVEL: 'info' },
    process.cwd(),
  );
  const root = createRootLogger(config, { write: (line: string) => stream.write(line) });
  return { root: root as unknown as FastifyBaseLogger, lines };
}

describe('requestChildLogger (the per-request logger)', () => {
  it('writes what pino.child writes: the base fields, the request id, and secrets redacted', () => {
    const { root, lines } = capture();
    const secrets = {
      apiKey: 'sk_live_secret',
      nested: { secretKey: 'sk_nested', kept: 1 },
      context: 'x',
    };
    // Fastify passes the route's level: the server's.
    requestChildLogger(root, { [REQUEST_ID_LOG_LABEL]: 'req-1' }, { level: root.level }).warn(
      secrets,
      'hello',
    );
    root.child({ [REQUEST_ID_LOG_LABEL]: 'req-1' }, {}).warn(secrets, 'hello');
    expect(lines).toHaveLength(2);
    const [ours, pinos] = lines.map(({ time: _time, ...rest }) => rest);
    expect(ours).toEqual(pinos);
    expect(ours).toMatchObject({
      requestId: 'req-1',
      role: expect.any(String),
      pid: process.pid,
      apiKey: '[redacted]',
      nested: { secretKey: '[redacted]', kept: 1 },
      msg: 'hello',
    });
  });

  it('escapes a request id as JSON, and its own children keep it', () => {
    const { root, lines } = capture();
    const child = requestChildLogger(root, { [REQUEST_ID_LOG_LABEL]: 'a"b\\c' }, {});
    child.child({ job: 7 }).warn('from a grandchild');
    expect(lines[0]).toMatchObject({ requestId: 'a"b\\c', job: 7, msg: 'from a grandchild' });
  });

  it('leaves other bindings and options to pino.child', () => {
    const { root, lines } = capture();
    requestChildLogger(root, { other: 1 }, {}).warn('a');
    requestChildLogger(root, { [REQUEST_ID_LOG_LABEL]: 'r' }, { level: 'error' }).warn(
      'filtered out by the level option',
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ other: 1, msg: 'a' });
  });
});
