import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../database/id';
import { queryRows } from '../database/query-rows';
import type { Provider } from './provider-hook.entity';

/** A hook as the inbound route needs it: whose it is and what verifies it. */
export interface InboundHook {
  projectId: string;
  projectEnabled: boolean;
  credentialsSealed: string | null;
}

/** The statements of provider_hooks. */
@Injectable()
export class ProviderHooksRepository {
  /**
   * Creates the project's hook of that provider or replaces its credentials;
   * an existing hook keeps its inbound id, so the URL pasted into the
   * provider's console stays valid.
   */
  async upsert(
    manager: EntityManager,
    projectId: string,
    provider: Provider,
    newInboundId: string,
    credentialsSealed: string | null,
  ): Promise<{ inboundId: string }> {
    const [row] = await queryRows<{ inboundId: string }>(
      manager,
      `INSERT INTO provider_hooks (id, project_id, provider, inbound_id, credentials_sealed)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (project_id, provider)
       DO UPDATE SET credentials_sealed = EXCLUDED.credentials_sealed, updated_at = now()
       RETURNING inbound_id AS "inboundId"`,
      [newId(), projectId, provider, newInboundId, credentialsSealed],
    );
    return row;
  }

  async findInbound(
    manager: EntityManager,
    provider: Provider,
    inboundId: string,
  ): Promise<InboundHook | null> {
    const [row] = await queryRows<InboundHook>(
      manager,
      `SELECT h.project_id AS "projectId", p.enabled AS "projectEnabled",
              h.credentials_sealed AS "credentialsSealed"
         FROM provider_hooks h JOIN projects p ON p.id = h.project_id
        WHERE h.inbound_id = $1 AND h.provider = $2`,
      [inboundId, provider],
    );
    return row ?? null;
  }

  /** Every sealed row, locked, for `secrets rotate`. */
  async lockSealed(
    manager: EntityManager,
  ): Promise<Array<{ id: string; projectId: string; provider: Provider; secretSealed: string }>> {
    return queryRows(
      manager,
      `SELECT id, project_id AS "projectId", provider, credentials_sealed AS "secretSealed"
         FROM provider_hooks
        WHERE credentials_sealed IS NOT NULL ORDER BY id FOR UPDATE`,
    );
  }

  async replaceSealed(manager: EntityManager, id: string, sealed: string): Promise<void> {
    await queryRows(manager, `UPDATE provider_hooks SET credentials_sealed = $2 WHERE id = $1`, [
      id,
      sealed,
    ]);
  }
}
