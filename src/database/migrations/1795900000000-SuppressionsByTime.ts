import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * GET /suppressions lists the newest suppression first: its partial index
 * keys on the suppression time. Every suppressed contact has one (the
 * BouncePolicy migration filled it in).
 */
export class SuppressionsByTime1795900000000 implements MigrationInterface {
  name = 'SuppressionsByTime1795900000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE contacts SET suppressed_at = updated_at WHERE suppressed AND suppressed_at IS NULL`,
    );
    await queryRunner.query(`DROP INDEX "public"."contacts_suppressed_idx"`);
    await queryRunner.query(
      `CREATE INDEX "contacts_suppressed_idx" ON "contacts" ("project_id", "suppressed_at", "id") WHERE suppressed`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."contacts_suppressed_idx"`);
    await queryRunner.query(
      `CREATE INDEX "contacts_suppressed_idx" ON "contacts" ("project_id", "id") WHERE suppressed`,
    );
  }
}
