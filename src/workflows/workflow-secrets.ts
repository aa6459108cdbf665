import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';
import { WebhookSecretsService } from '../webhooks/webhook-secrets.service';
import { newWebhookSecret } from '../webhooks/webhook-signature';

/** The workflow's secret is sealed with neither APP_SECRET nor APP_SECRET_PREVIOUS. */
export class UnreadableWorkflowSecretError extends Error {
  constructor(workflowId: string) {
    super(
      `the signing secret of workflow ${workflowId} opens with neither APP_SECRET nor APP_SECRET_PREVIOUS: rotate the workflow secret`,
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
