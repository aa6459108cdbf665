import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The delivery recovery also looks for SENDING rows untouched for minutes (a
 * job lost mid-attempt); a partial index keeps that as cheap as the QUEUED one.
 */
export class SendingRecoveryOpen1795470000000 implements MigrationInterface {
  name = 'SendingRecoveryOpen1795470000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "emails_updated_at_sending_idx" ON "emails" ("updated_at") WHERE status = 'SENDING'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."emails_updated_at_sending_idx"`);
  }
}
