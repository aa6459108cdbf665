import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each workflow's own secret signs its WEBHOOK calls (Standard Webhooks), kept
 * sealed with APP_SECRET as webhook endpoint secrets are. A migration cannot
 * seal (it runs without APP_SECRET), so a workflow created before this one
 * starts without a secret and is given one, sealed, by the first of its
 * WEBHOOK calls; POST /workflows/{id}/rotate-secret shows a new one.
 */
export class WorkflowSigningSecrets1795620000000 implements MigrationInterface {
  name = 'WorkflowSigningSecrets1795620000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflows" ADD "secret_sealed" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflows" DROP COLUMN "secret_sealed"`);
  }
}
