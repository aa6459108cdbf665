import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { InboundMessagesService } from './inbound-messages.service';

/**
 * A message stored and answered 250 whose job was never added (Redis down at
 * that moment, the process killed in between) or was lost stays RECEIVED:
 * once per RECOVERY_EVERY_MS across the workers, its job is added again
 * under its own id (a no-op while it exists). The same run deletes finished
 * messages past their retention.
 */
@Injectable()
export class InboundRecovery extends QueueRecovery {
  readonly queue = QUEUES.INBOUND;
  readonly everyMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly messages: InboundMessagesService,
  ) {
    super();
    this.everyMs = config.recoveryEveryMs;
  }

  recover(): Promise<{ found: number; deleted: number }> {
    return this.messages.recover();
  }
}
