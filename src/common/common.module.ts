import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { ApiKeyGuard } from './auth/api-key.guard';
import { AllExceptionsFilter } from './errors/all-exceptions.filter';
import { EnvelopeInterceptor } from './http/envelope.interceptor';
import { RateLimitService } from './rate-limit/rate-limit.service';
import { AppValidationPipe } from './validation/validation.pipe';

/** The cross-cutting pieces every route goes through: guard, pipe, success envelope and error filter. */
@Global()
@Module({
  providers: [
    RateLimitService,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_PIPE, useClass: AppValidationPipe },
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
    { provide: APP_INTERCEPTOR, useClass: EnvelopeInterceptor },
  ],
  exports: [RateLimitService],
})
export class CommonModule {}
