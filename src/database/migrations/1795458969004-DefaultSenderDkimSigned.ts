import { MigrationInterface, QueryRunner } from 'typeorm';

export class DefaultSenderDkimSigned1795458969004 implements MigrationInterface {
  name = 'DefaultSenderDkimSigned1795458969004';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "projects"
            ADD "default_from_email" character varying(320)
        `);
    await queryRunner.query(`
            ALTER TABLE "projects"
            ADD "default_from_name" character varying(200)
        `);
    await queryRunner.query(`
            ALTER TABLE "emails"
            ADD "dkim_signed" boolean
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "emails" DROP COLUMN "dkim_signed"
        `);
    await queryRunner.query(`
            ALTER TABLE "projects" DROP COLUMN "default_from_name"
        `);
    await queryRunner.query(`
            ALTER TABLE "projects" DROP COLUMN "default_from_email"
        `);
  }
}
