import { LoggerService } from '@nestjs/common';
import type { FastifyBaseLogger } from 'fastify';
import pino, { Bindings, ChildLoggerOptions, Logger as Pino } from 'pino';
import { AppConfig } from '../../config/config';

/** Paths pino replaces with "[redacted]": keys, passwords, DKIM material are never logged. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  'req.headers["idempotency-key"]',
  'apiKey',
  'secretKey',
  'publicKey',
  'privateKey',
  'password',
  'appSecret',
  'appSecretPrevious',
  '*.apiKey',
  '*.secretKey',
  '*.publicKey',
  '*.privateKey',
  '*.password',
  '*.appSecret',
  '*.appSecretPrevious',
  '*.dkimPrivateKey',
];

/**
 * The process's one pino logger (JSON lines on stdout). Fastify uses it for
 * request logs, Nest's Logger through PinoNestLogger. Writes are asynchronous
 * (SonicBoom) so logging does not cost a syscall per line on the hot path.
 */
export function createRootLogger(config: AppConfig, stream?: pino.DestinationStream): Pino {
  const destination = stream ?? pino.destination({ dest: 1, sync: false });
  const logger = pino(
    {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid, role: config.role },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
  if (!stream)
    process.once('exit', () => (destination as ReturnType<typeof pino.destination>).flushSync());
  return logger;
}

type Level = 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal';

/**
 * Nest's LoggerService over pino. Accepts Nest's forms (`log(message, context)`,
 * `error(message, stack, context)`) and the structured form this code base uses:
 * `logger.error({ err, requestId }, 'what happened')`.
 */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Pino) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const rest = [...params];
    // Nest appends the logger's context as the last argument.
    const context =
      rest.length > 0 && typeof rest[rest.length - 1] === 'string'
        ? (rest.pop() as string)
        : undefined;
    if (message instanceof Error) {
      this.pino[level]({ context, err: message }, message.message);
    } else if (typeof message === 'object' && message !== null) {
      const text = typeof rest[0] === 'string' ? rest[0] : undefined;
      this.pino[level]({ context, ...(message as Record<string, unknown>) }, text);
    } else {
      const stack = level === 'error' && typeof rest[0] === 'string' ? rest[0] : undefined;
      this.pino[level]({ context, ...(stack ? { stack } : {}) }, String(message));
    }
  }
}

/** The key of the request id in every line a request's logger writes. */
export const REQUEST_ID_LOG_LABEL = 'requestId';

/**
 * Fastify's `childLoggerFactory`: the logger of one request, the root logger
 * with `"requestId":"…"` added to its bindings. Built as pino's own `child()`
 * builds one (an object on the parent's prototype with its bindings string
 * extended, `pino.symbols.chindingsSym`) but without pino's pass over the new
 * bindings: with the wildcard redact paths ("*.apiKey", …) pino sends every
 * binding value through @pinojs/redact, which parses each path again even for
 * a plain string. That was the largest allocation of the open pixel (2.5 KB a
 * request, 17 % of its garbage) for a value that is never secret. What the
 * child logs is redacted exactly as before (it keeps the parent's redaction).
 * Anything else (another level, other options or bindings) goes through
 * `child()`.
 */
export function requestChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  const keys = Object.keys(bindings);
  // Fastify passes the route's log level (the server's unless the route sets one) and nothing else.
  const plain =
    Object.keys(options).every((key) => key === 'level') &&
    (options.level === undefined || options.level === logger.level);
  if (keys.length !== 1 || keys[0] !== REQUEST_ID_LOG_LABEL || !plain) {
    return logger.child(bindings, options);
  }
  const parent = logger as unknown as Record<symbol, string>;
  const child = Object.create(logger) as FastifyBaseLogger & Record<symbol, string>;
  child[pino.symbols.chindingsSym] =
    `${parent[pino.symbols.chindingsSym]},"${REQUEST_ID_LOG_LABEL}":${JSON.stringify(String(bindings[REQUEST_ID_LOG_LABEL]))}`;
  return child;
}

/** Capability tokens in paths (unsubscribe, tracking links, provider webhook URLs) stay out of logs. */
export function loggableUrl(url: string): string {
  return url.replace(/\/(unsubscribe|confirm|t\/[a-z]|inbound\/[a-z]+)\/[^/?]+/, '/$1/[token]');
}
