import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A project's tracking domain (issue 27, contract "Tracking domain"): the
 * host name, its status and last check, and one project at most per
 * verified name.
 */
export class ProjectTrackingDomain1795840000010 implements MigrationInterface {
  name = 'ProjectTrackingDomain1795840000010';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "projects" ADD "tracking_domain" character varying(253)`);
    await queryRunner.query(
      `CREATE TYPE "public"."project_tracking_domain_status" AS ENUM('PENDING', 'VERIFIED', 'FAILED')`,
    );
    await queryRunner.query(
      `ALTER TABLE "projects" ADD "tracking_domain_status" "public"."project_tracking_domain_status"`,
    );
    await queryRunner.query(`ALTER TABLE "projects" ADD "tracking_domain_record" jsonb`);
    await queryRunner.query(
      `ALTER TABLE "projects" ADD "tracking_domain_set_at" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(
      `ALTER TABLE "projects" ADD "tracking_domain_checked_at" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "projects_verified_tracking_domain_key" ON "projects" ("tracking_domain") WHERE "tracking_domain_status" = 'VERIFIED'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."projects_verified_tracking_domain_key"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "tracking_domain_checked_at"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "tracking_domain_set_at"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "tracking_domain_record"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "tracking_domain_status"`);
    await queryRunner.query(`DROP TYPE "public"."project_tracking_domain_status"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "tracking_domain"`);
  }
}
