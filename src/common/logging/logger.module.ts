import { DynamicModule, Module } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { LoggerModule as PinoLoggerModule } from 'nestjs-pino';
import { AppConfig } from '../../config/config';

/** Paths pino replaces with "[redacted]": keys, passwords, DKIM material, never logged. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["idempotency-key"]',
  '*.apiKey',
  '*.secretKey',
  '*.publicKey',
  '*.privateKey',
  '*.password',
  '*.appSecret',
  '*.dkimPrivateKey',
];

type RawWithId = IncomingMessage & { id?: string };

@Module({})
export class LoggerModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: LoggerModule,
      imports: [
        PinoLoggerModule.forRoot({
          pinoHttp: {
            level: config.logLevel,
            redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
            // Fastify's genReqId already chose the id and stored it on the raw request.
            genReqId: (req: IncomingMessage) => (req as RawWithId).id ?? '',
            customProps: (req: IncomingMessage) => ({ requestId: (req as RawWithId).id }),
            serializers: {
              req: (req: { id: string; method: string; url: string }) => ({
                id: req.id,
                method: req.method,
                // Unsubscribe and tracking tokens are capabilities: keep them out of logs.
                url: req.url.replace(/\/(unsubscribe|t\/[a-z])\/[^/?]+/, '/$1/[token]'),
              }),
            },
            quietReqLogger: true,
          },
        }),
      ],
    };
  }
}
