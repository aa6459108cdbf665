import { CallHandler, ExecutionContext, Injectable, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { map, Observable } from 'rxjs';

export const RAW_RESPONSE_KEY = 'mailwright:raw-response';

/** The handler's return value is sent as is (health probes, HTML pages, redirects). */
export const RawResponse = () => SetMetadata(RAW_RESPONSE_KEY, true);

/** Wraps every handler result in the success envelope `{ success: true, data }`. */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const raw = this.reflector.getAllAndOverride<boolean>(RAW_RESPONSE_KEY, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (raw) return next.handle();
    return next.handle().pipe(map((data: unknown) => ({ success: true, data: data ?? null })));
  }
}
