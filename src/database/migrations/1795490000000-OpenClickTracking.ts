import { MigrationInterface, QueryRunner } from 'typeorm';

export class OpenClickTracking1795490000000 implements MigrationInterface {
  name = 'OpenClickTracking1795490000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "emails"
            ADD "track_opens" boolean NOT NULL DEFAULT false
        `);
    await queryRunner.query(`
            ALTER TABLE "emails"
            ADD "track_clicks" boolean NOT NULL DEFAULT false
        `);
    await queryRunner.query(`
            ALTER TABLE "emails"
            ADD "opens" integer NOT NULL DEFAULT '0'
        `);
    await queryRunner.query(`
            ALTER TABLE "emails"
            ADD "clicks" integer NOT NULL DEFAULT '0'
        `);
    await queryRunner.query(`
            ALTER TABLE "templates"
            ADD "track" boolean NOT NULL DEFAULT false
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "templates" DROP COLUMN "track"
        `);
    await queryRunner.query(`
            ALTER TABLE "emails" DROP COLUMN "clicks"
        `);
    await queryRunner.query(`
            ALTER TABLE "emails" DROP COLUMN "opens"
        `);
    await queryRunner.query(`
            ALTER TABLE "emails" DROP COLUMN "track_clicks"
        `);
    await queryRunner.query(`
            ALTER TABLE "emails" DROP COLUMN "track_opens"
        `);
  }
}
