import { MigrationInterface, QueryRunner } from 'typeorm';

export class DomainRecordProblems1795459209549 implements MigrationInterface {
  name = 'DomainRecordProblems1795459209549';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "domains"
            ADD "record_problems" jsonb NOT NULL DEFAULT '{}'
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "domains" DROP COLUMN "record_problems"
        `);
  }
}
