import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { ContactImportsService } from './contact-imports.service';

/**
 * An import committed whose job was never added (or was lost) is picked up by
 * the imports queue's recovery scheduler (queue/recovery.ts, RECOVERY_EVERY_MS):
 * once per interval across all workers, every unfinished import is enqueued
 * again under its own id, which adds nothing when its job exists.
 */
@Injectable()
export class ContactImportsRecovery extends QueueRecovery {
  readonly queue = QUEUES.IMPORTS;
  readonly everyMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly imports: ContactImportsService,
  ) {
    super();
    this.everyMs = config.recoveryEveryMs;
  }

  recover(): Promise<{ found: number }> {
    return this.imports.recoverUnfinished();
  }
}
