import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/auth.decorators';
import { ExpensiveWork } from './expensive-work';

/**
 * Refuses a request of a route whose work is expensive (UseInterceptors on it) with 429 while its
 * project's budget is spent, before the body is validated: interceptors run before pipes, so a
 * client that ignores Retry-After and repeats a 50-rule preview costs one Redis round trip, not a
 * validation and compilation of its condition each time.
 */
@Injectable()
export class ExpensiveWorkGate implements NestInterceptor {
  constructor(private readonly expensive: ExpensiveWork) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    if (request.auth) await this.expensive.assertBudget(request.auth.project.id);
    return next.handle();
  }
}
