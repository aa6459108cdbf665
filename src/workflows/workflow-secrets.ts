import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';
import { WebhookSecretsService } from '../webhooks/webhook-secrets.service';
import { newWebhookSecret } from '../webhooks/webhook-signature';
import type { StepSecrets } from './workflow-step-secrets';

/** The workflow's secret is sealed with neither APP_SECRET nor APP_SECRET_PREVIOUS. */
export class UnreadableWorkflowSecretError extends Error {
  constructor(workflowId: string, what = 'signing secret') {
    super(
      what === 'signing secret'
        ? `the signing secret of workflow ${workflowId} opens with neither APP_SECRET nor APP_SECRET_PREVIOUS: rotate the workflow secret`
        : `the ${what} of workflow ${workflowId} open with neither APP_SECRET nor APP_SECRET_PREVIOUS: save the steps again with them`,
    );
    this.name = 'UnreadableWorkflowSecretError';
  }
}

/**
 * Each workflow's WEBHOOK signing secret: created with the workflow (shown in
 * that answer only), replaced by rotate, sealed in the webhook secrets' box.
 */
@Injectable()
export class WorkflowSecrets {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly box: WebhookSecretsService,
  ) {}

  /** A new secret for this workflow and the sealed form to store. */
  create(workflowId: string): { secret: string; sealed: string } {
    const secret = newWebhookSecret();
    return { secret, sealed: this.box.sealWorkflowSecret(workflowId, secret) };
  }

  /**
   * A new secret for a workflow of this project, or null when there is none.
   * Written without touching updated_at: the definition did not change.
   */
  async rotate(
    projectId: string,
    workflowId: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<string | null> {
    const created = this.create(workflowId);
    const rows = await queryRows<{ id: string }>(
      manager,
      'UPDATE workflows SET secret_sealed = $3 WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL RETURNING id',
      [workflowId, projectId, created.sealed],
    );
    return rows.length > 0 ? created.secret : null;
  }

  /** The stored form of the steps' sealed values; null when there are none. */
  sealSteps(workflowId: string, secrets: StepSecrets): string | null {
    return Object.keys(secrets).length === 0
      ? null
      : this.box.sealWorkflowSteps(workflowId, JSON.stringify(secrets));
  }

  /** The steps' sealed values; throws UnreadableWorkflowSecretError when no configured secret opens them. */
  openSteps(workflowId: string, sealed: string | null): StepSecrets {
    if (sealed === null) return {};
    try {
      return JSON.parse(this.box.openWorkflowSteps(workflowId, sealed)) as StepSecrets;
    } catch {
      throw new UnreadableWorkflowSecretError(workflowId, 'WEBHOOK step credentials');
    }
  }

  /** The steps' sealed values as stored now (read per call, so an edit applies to the next call in every process). */
  async stepSecretsOf(
    workflowId: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<StepSecrets> {
    const [row] = await queryRows<{ sealed: string | null }>(
      manager,
      'SELECT step_secrets_sealed AS sealed FROM workflows WHERE id = $1',
      [workflowId],
    );
    return this.openSteps(workflowId, row?.sealed ?? null);
  }

  /**
   * The secret that signs this workflow's calls now (read per call, so a
   * rotation applies to the next call in every process). A workflow from
   * before signing gets one here; the first writer wins.
   */
  async secretOf(
    workflowId: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<string> {
    const [row] = await queryRows<{ sealed: string | null }>(
      manager,
      'SELECT secret_sealed AS sealed FROM workflows WHERE id = $1',
      [workflowId],
    );
    let sealed = row?.sealed ?? null;
    if (sealed === null) {
      const created = this.create(workflowId);
      await queryRows(
        manager,
        'UPDATE workflows SET secret_sealed = $2 WHERE id = $1 AND secret_sealed IS NULL',
        [workflowId, created.sealed],
      );
      const [stored] = await queryRows<{ sealed: string | null }>(
        manager,
        'SELECT secret_sealed AS sealed FROM workflows WHERE id = $1',
        [workflowId],
      );
      sealed = stored?.sealed ?? created.sealed;
    }
    try {
      return this.box.openWorkflowSecret(workflowId, sealed);
    } catch {
      throw new UnreadableWorkflowSecretError(workflowId);
    }
  }
}
