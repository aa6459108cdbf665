import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ApiKeyGuard } from './auth/api-key.guard';
import { AuthModule } from './auth/auth.module';
import { AllExceptionsFilter } from './errors/all-exceptions.filter';
import { ExpensiveWork } from './rate-limit/expensive-work';
import { RateLimitService } from './rate-limit/rate-limit.service';
import { AppValidationPipe } from './validation/validation.pipe';

/**
 * The cross-cutting pieces every route goes through: guard, pipe and error
 * filter. (The success envelope is a Fastify hook: see http/envelope.ts.)
 */
@Global()
@Module({
  imports: [AuthModule],
  providers: [
    RateLimitService,
    ExpensiveWork,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_PIPE, useClass: AppValidationPipe },
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
  ],
  exports: [RateLimitService, ExpensiveWork],
})
export class CommonModule {}
