import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { WEBHOOK_SECRET_BOX } from './webhooks.constants';
import { endpointUrlAad, hasCredentials, maskCredentials } from './url-credentials';
import { WebhooksRepository } from './webhooks.repository';

export interface WebhookSecretRotation {
  resealed: number;
  alreadyCurrent: number;
}

/** `secrets rotate` of signing secrets: endpoints' and workflows' (their WEBHOOK steps). */
export interface SigningSecretsRotation {
  endpoints: WebhookSecretRotation;
  workflows: WebhookSecretRotation;
  /** Endpoint URLs' and WEBHOOK steps' sealed credentials; `sealed`: endpoint URLs saved before sealing, sealed now. */
  credentials: WebhookSecretRotation & { sealed: number };
}

/** Signing secrets that no configured secret opens. */
export class UnreadableWebhookSecretsError extends Error {
  constructor(
    readonly endpointIds: string[],
    readonly workflowIds: string[] = [],
  ) {
    const list = (ids: string[]) => `${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ', …' : ''}`;
    const owners = [
      endpointIds.length > 0 ? `endpoints ${list(endpointIds)}` : null,
      workflowIds.length > 0 ? `workflows ${list(workflowIds)}` : null,
    ].filter(Boolean);
    super(
      `${endpointIds.length + workflowIds.length} webhook signing secret(s) (${owners.join('; ')}) open with neither APP_SECRET nor APP_SECRET_PREVIOUS. ` +
        'Nothing was re-sealed. Add the earlier secret to APP_SECRET_PREVIOUS and run `node dist/cli.js secrets rotate` again, or rotate those secrets (POST /webhooks/{id}/rotate-secret, POST /workflows/{id}/rotate-secret).',
    );
    this.name = 'UnreadableWebhookSecretsError';
  }
}

/** A workflow's sealed secret is bound to "workflow:<id>", so an endpoint's sealed secret copied onto a workflow row does not open. */
function workflowAad(workflowId: string): string {
  return `workflow:${workflowId}`;
}

/** A workflow's sealed step credentials are bound to "workflow-steps:<id>". */
function workflowStepsAad(workflowId: string): string {
  return `workflow-steps:${workflowId}`;
}

/**
 * Webhook signing secrets in the one box: endpoints' and workflows' (their
 * WEBHOOK steps sign the same way). `secrets rotate` seals again under the
 * current APP_SECRET every secret only an earlier one opens, in one
 * transaction with the rows locked; if any opens under none, nothing is written.
 */
@Injectable()
export class WebhookSecretsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(WEBHOOK_SECRET_BOX) private readonly box: SecretBox,
    private readonly repository: WebhooksRepository,
  ) {}

  /** The stored (base64) form of a workflow's signing secret. */
  sealWorkflowSecret(workflowId: string, secret: string): string {
    return this.box.seal(secret, workflowAad(workflowId)).toString('base64');
  }

  /** Throws when neither APP_SECRET nor APP_SECRET_PREVIOUS opens it. */
  openWorkflowSecret(workflowId: string, sealed: string): string {
    return this.box.openString(Buffer.from(sealed, 'base64'), workflowAad(workflowId));
  }

  /** The stored (base64) form of a workflow's WEBHOOK step credentials (a JSON text). */
  sealWorkflowSteps(workflowId: string, json: string): string {
    return this.box.seal(json, workflowStepsAad(workflowId)).toString('base64');
  }

  /** Throws when neither APP_SECRET nor APP_SECRET_PREVIOUS opens it. */
  openWorkflowSteps(workflowId: string, sealed: string): string {
    return this.box.openString(Buffer.from(sealed, 'base64'), workflowStepsAad(workflowId));
  }

  rotate(): Promise<SigningSecretsRotation> {
    return this.dataSource.transaction(async (manager) => {
      const endpoints = this.reseal(await this.repository.lockSealedSecrets(manager), (id) => id);
      const workflows = this.reseal(
        await this.repository.lockSealedWorkflowSecrets(manager),
        workflowAad,
      );
      const urls = this.reseal(await this.repository.lockSealedUrls(manager), endpointUrlAad);
      const steps = this.reseal(
        await this.repository.lockSealedWorkflowSteps(manager),
        workflowStepsAad,
      );
      const unreadableEndpoints = [...endpoints.unreadable, ...urls.unreadable];
      const unreadableWorkflows = [...workflows.unreadable, ...steps.unreadable];
      if (unreadableEndpoints.length + unreadableWorkflows.length > 0) {
        throw new UnreadableWebhookSecretsError(unreadableEndpoints, unreadableWorkflows);
      }
      for (const row of [...urls.resealed])
        await this.repository.replaceSealedUrl(manager, row.id, row.sealed);
      for (const row of steps.resealed)
        await this.repository.replaceSealedWorkflowSteps(manager, row.id, row.sealed);
      // Endpoint URLs saved with credentials before they were sealed.
      const clear = (await this.repository.lockClearCredentialUrls(manager)).filter((row) =>
        hasCredentials(row.url),
      );
      for (const row of clear) {
        const sealed = this.box.seal(row.url, endpointUrlAad(row.id)).toString('base64');
        await this.repository.sealUrl(manager, row.id, maskCredentials(row.url), sealed);
      }
      for (const row of endpoints.resealed)
        await this.repository.replaceSealedSecret(manager, row.id, row.sealed);
      for (const row of workflows.resealed)
        await this.repository.replaceSealedWorkflowSecret(manager, row.id, row.sealed);
      return {
        endpoints: endpoints.result,
        workflows: workflows.result,
        credentials: {
          resealed: urls.result.resealed + steps.result.resealed,
          alreadyCurrent: urls.result.alreadyCurrent + steps.result.alreadyCurrent,
          sealed: clear.length,
        },
      };
    });
  }

  private reseal(rows: Array<{ id: string; secretSealed: string }>, aad: (id: string) => string) {
    const result: WebhookSecretRotation = { resealed: 0, alreadyCurrent: 0 };
    const unreadable: string[] = [];
    const resealed: Array<{ id: string; sealed: string }> = [];
    for (const row of rows) {
      let opened: { plaintext: Buffer; current: boolean };
      try {
        opened = this.box.unseal(Buffer.from(row.secretSealed, 'base64'), aad(row.id));
      } catch {
        unreadable.push(row.id);
        continue;
      }
      if (opened.current) result.alreadyCurrent++;
      else
        resealed.push({
          id: row.id,
          sealed: this.box.seal(opened.plaintext, aad(row.id)).toString('base64'),
        });
      opened.plaintext.fill(0);
    }
    result.resealed = resealed.length;
    return { result, unreadable, resealed };
  }
}
