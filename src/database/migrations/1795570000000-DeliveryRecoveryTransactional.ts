import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The delivery recovery's QUEUED rows are those of no campaign: a campaign's
 * QUEUED emails are handed to delivery by its own feed (at most about 5,000
 * delivery jobs waiting; a RUN job re-feeds what a lost job left QUEUED), and
 * the recovery re-adding them too broke that bound by up to 1,000 rows per
 * run. The index follows the query, so a million-recipient backlog is not
 * scanned to find the transactional rows.
 */
export class DeliveryRecoveryTransactional1795570000000 implements MigrationInterface {
  name = 'DeliveryRecoveryTransactional1795570000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."emails_queued_at_queued_idx"`);
    await queryRunner.query(
      `CREATE INDEX "emails_queued_at_queued_idx" ON "emails" ("queued_at") WHERE status = 'QUEUED' AND campaign_id IS NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."emails_queued_at_queued_idx"`);
    await queryRunner.query(
      `CREATE INDEX "emails_queued_at_queued_idx" ON "emails" ("queued_at") WHERE status = 'QUEUED'`,
    );
  }
}
