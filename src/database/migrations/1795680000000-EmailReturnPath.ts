import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The envelope sender (VERP return path) each email was attempted with, kept
 * so GET /emails/{id} shows what was sent even after the sending domain's
 * RETURN_PATH record changes. Older rows stay null.
 */
export class EmailReturnPath1795680000000 implements MigrationInterface {
  name = 'EmailReturnPath1795680000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "emails" ADD "return_path" character varying(320)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "emails" DROP COLUMN "return_path"`);
  }
}
