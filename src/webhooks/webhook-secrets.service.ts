import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { WEBHOOK_SECRET_BOX } from './webhooks.constants';
import { WebhooksRepository } from './webhooks.repository';

export interface WebhookSecretRotation {
  resealed: number;
  alreadyCurrent: number;
}

/** Endpoint secrets that no configured secret opens. */
export class UnreadableWebhookSecretsError extends Error {
  constructor(readonly endpointIds: string[]) {
    super(
      `${endpointIds.length} webhook signing secret(s) (endpoints ${endpointIds.slice(0, 10).join(', ')}${endpointIds.length > 10 ? ', …' : ''}) open with neither APP_SECRET nor APP_SECRET_PREVIOUS. ` +
        'Nothing was re-sealed. Add the earlier secret to APP_SECRET_PREVIOUS and run `node dist/cli.js secrets rotate` again, or rotate those endpoints\u2019 secrets (POST /webhooks/{id}/rotate-secret).',
    );
    this.name = 'UnreadableWebhookSecretsError';
  }
}

/**
 * `secrets rotate` for webhook signing secrets: every secret only an earlier
 * APP_SECRET opens is sealed again under the current one, in one transaction
 * with the rows locked; if any opens under none, nothing is written.
 */
@Injectable()
export class WebhookSecretsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(WEBHOOK_SECRET_BOX) private readonly box: SecretBox,
    private readonly repository: WebhooksRepository,
  ) {}

  rotate(): Promise<WebhookSecretRotation> {
    return this.dataSource.transaction(async (manager) => {
      const rows = await this.repository.lockSealedSecrets(manager);
      const result: WebhookSecretRotation = { resealed: 0, alreadyCurrent: 0 };
      const unreadable: string[] = [];
      const resealed: Array<{ id: string; sealed: string }> = [];
      for (const row of rows) {
        let opened: { plaintext: Buffer; current: boolean };
        try {
          opened = this.box.unseal(Buffer.from(row.secretSealed, 'base64'), row.id);
        } catch {
          unreadable.push(row.id);
          continue;
        }
        if (opened.current) result.alreadyCurrent++;
        else
          resealed.push({
            id: row.id,
            sealed: this.box.seal(opened.plaintext, row.id).toString('base64'),
          });
        opened.plaintext.fill(0);
      }
      if (unreadable.length > 0) throw new UnreadableWebhookSecretsError(unreadable);
      for (const row of resealed)
        await this.repository.replaceSealedSecret(manager, row.id, row.sealed);
      result.resealed = resealed.length;
      return result;
    });
  }
}
