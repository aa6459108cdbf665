import { LoggerService } from '@nestjs/common';
import pino, { Logger as Pino } from 'pino';
import { AppConfig } from '../../config/config';

/** Paths pino replaces with "[redacted]": keys, passwords, DKIM material are never logged. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
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
export function createRootLogger(config: AppConfig): Pino {
  const destination = pino.destination({ dest: 1, sync: false });
  const logger = pino(
    {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid, role: config.role },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
  process.once('exit', () => destination.flushSync());
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
    const context = rest.length > 0 && typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
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

/** Capability tokens in paths (unsubscribe, tracking links) stay out of logs. */
export function loggableUrl(url: string): string {
  return url.replace(/\/(unsubscribe|t\/[a-z])\/[^/?]+/, '/$1/[token]');
}
