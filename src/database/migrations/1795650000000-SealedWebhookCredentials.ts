import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Credentials of outbound calls sealed at rest (SecretBox, the webhook
 * secrets' box): an endpoint URL's `user:pass@` (`url` keeps the URL with
 * `***` in their place, `url_sealed` the real one) and a workflow's WEBHOOK
 * step header values and URL credentials (`steps` keeps `***`,
 * `step_secrets_sealed` the real values by step id). A migration cannot seal
 * (it runs without APP_SECRET): rows saved before keep their clear values,
 * which are used as they are and masked in every answer until the next save
 * (or, for an endpoint URL, `secrets rotate`) seals them.
 */
export class SealedWebhookCredentials1795650000000 implements MigrationInterface {
  name = 'SealedWebhookCredentials1795650000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" ADD "url_sealed" text`);
    await queryRunner.query(`ALTER TABLE "workflows" ADD "step_secrets_sealed" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflows" DROP COLUMN "step_secrets_sealed"`);
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" DROP COLUMN "url_sealed"`);
  }
}
