import { MigrationInterface, QueryRunner } from 'typeorm';

/** The delivery recovery sweep looks for old QUEUED rows across projects; a partial index keeps it cheap. */
export class SendingRecovery1795250265735 implements MigrationInterface {
  name = 'SendingRecovery1795250265735';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "emails_queued_at_queued_idx" ON "emails" ("queued_at") WHERE status = 'QUEUED'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."emails_queued_at_queued_idx"`);
  }
}
