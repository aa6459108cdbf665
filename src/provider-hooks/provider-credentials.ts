import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import type { Provider } from './provider-hook.entity';
import { PROVIDER_CREDENTIALS_BOX } from './provider-hooks.constants';
import { ProviderHooksRepository } from './provider-hooks.repository';

/** A provider's credentials as stored (sealed JSON): the fields its PUT takes. */
export type Credentials = Partial<Record<'secret' | 'publicKey' | 'username' | 'password', string>>;

/** A sealed box is bound to its project and provider: copied to another row, it does not open. */
function aad(projectId: string, provider: string): string {
  return `provider-hook:${projectId}:${provider}`;
}

/** Provider credentials that no configured secret opens (`secrets rotate` writes nothing then). */
export class UnreadableProviderCredentialsError extends Error {
  readonly code = 'APP_SECRET_MISMATCH';

  constructor(readonly hooks: Array<{ projectId: string; provider: string }>) {
    super(
      `${hooks.length} provider webhook credential set(s) (${hooks
        .slice(0, 10)
        .map((h) => `${h.provider} of project ${h.projectId}`)
        .join(
          ', ',
        )}) open with neither APP_SECRET nor APP_SECRET_PREVIOUS. Nothing was re-sealed. ` +
        'Add the earlier secret to APP_SECRET_PREVIOUS and run `node dist/cli.js secrets rotate` again, or store those credentials again (PUT /project/inbound/{provider}).',
    );
    this.name = 'UnreadableProviderCredentialsError';
  }
}

/**
 * Provider webhook credentials sealed at rest with APP_SECRET (their own box
 * label), opened per request, and re-sealed by `secrets rotate`.
 */
@Injectable()
export class ProviderCredentials {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(PROVIDER_CREDENTIALS_BOX) private readonly box: SecretBox,
    private readonly hooks: ProviderHooksRepository,
  ) {}

  /** The stored (base64) form. */
  seal(projectId: string, provider: Provider, credentials: Credentials): string {
    return this.box.seal(JSON.stringify(credentials), aad(projectId, provider)).toString('base64');
  }

  /** Throws when neither APP_SECRET nor APP_SECRET_PREVIOUS opens it. */
  open(projectId: string, provider: Provider, sealed: string): Credentials {
    return JSON.parse(
      this.box.openString(Buffer.from(sealed, 'base64'), aad(projectId, provider)),
    ) as Credentials;
  }

  /** Re-seals under the current APP_SECRET what only an earlier one opens; all or nothing. */
  rotate(): Promise<{ resealed: number; alreadyCurrent: number }> {
    return this.dataSource.transaction(async (manager) => {
      const rows = await this.hooks.lockSealed(manager);
      const unreadable: Array<{ projectId: string; provider: string }> = [];
      const resealed: Array<{ id: string; sealed: string }> = [];
      let alreadyCurrent = 0;
      for (const row of rows) {
        const boundTo = aad(row.projectId, row.provider);
        let opened: { plaintext: Buffer; current: boolean };
        try {
          opened = this.box.unseal(Buffer.from(row.secretSealed, 'base64'), boundTo);
        } catch {
          unreadable.push({ projectId: row.projectId, provider: row.provider });
          continue;
        }
        if (opened.current) alreadyCurrent++;
        else
          resealed.push({
            id: row.id,
            sealed: this.box.seal(opened.plaintext, boundTo).toString('base64'),
          });
        opened.plaintext.fill(0);
      }
      if (unreadable.length > 0) throw new UnreadableProviderCredentialsError(unreadable);
      for (const row of resealed) await this.hooks.replaceSealed(manager, row.id, row.sealed);
      return { resealed: resealed.length, alreadyCurrent };
    });
  }
}
