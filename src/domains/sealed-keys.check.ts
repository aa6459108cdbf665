import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { SealedKeysService, UnreadableSealedKeysError } from './sealed-keys.service';

/**
 * Refuses to start when stored DKIM keys open under none of the configured
 * secrets. Without it a changed APP_SECRET passes unnoticed until every send
 * fails, while the domains still show VERIFIED. Runs in every role, during
 * init: before the HTTP server listens and before any worker takes a job.
 */
@Injectable()
export class SealedKeysCheck implements OnModuleInit {
  private readonly logger = new Logger(SealedKeysCheck.name);

  constructor(private readonly sealedKeys: SealedKeysService) {}

  async onModuleInit(): Promise<void> {
    const audit = await this.sealedKeys.audit();
    if (audit.unreadable.length) {
      throw new UnreadableSealedKeysError(
        audit.unreadable,
        'Was APP_SECRET changed? Set APP_SECRET_PREVIOUS to the earlier secret (comma-separated if ' +
          'several) and start again, then run `node dist/cli.js secrets rotate` to re-seal the keys ' +
          'under the current APP_SECRET. Or set APP_SECRET back to its earlier value.',
      );
    }
    if (audit.previous) {
      this.logger.warn(
        { keys: audit.previous },
        'some DKIM keys open only with a secret of APP_SECRET_PREVIOUS: run `node dist/cli.js secrets rotate` to re-seal them under APP_SECRET',
      );
    }
  }
}
