import { MigrationInterface, QueryRunner } from 'typeorm';

export class Domains1795248435710 implements MigrationInterface {
  name = 'Domains1795248435710';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TYPE "public"."domain_status" AS ENUM('PENDING', 'VERIFIED', 'FAILED')
        `);
    await queryRunner.query(`
            CREATE TABLE "domains" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "domain" character varying(253) NOT NULL,
                "status" "public"."domain_status" NOT NULL DEFAULT 'PENDING',
                "ownership_token" character varying(64) NOT NULL,
                "dkim_selector" character varying(63) NOT NULL,
                "dkim_public_key" text NOT NULL,
                "dkim_private_key_sealed" bytea NOT NULL,
                "record_statuses" jsonb NOT NULL DEFAULT '{}'::jsonb,
                "last_checked_at" TIMESTAMP WITH TIME ZONE,
                "verified_at" TIMESTAMP WITH TIME ZONE,
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_05a6b087662191c2ea7f7ddfc4d" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_domains_status_checked" ON "domains" ("status", "last_checked_at")
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "UQ_domains_project_domain" ON "domains" ("project_id", "domain")
        `);
    await queryRunner.query(`
            ALTER TABLE "domains"
            ADD CONSTRAINT "FK_38b0af2ac0ef5d9945832943127" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "domains" DROP CONSTRAINT "FK_38b0af2ac0ef5d9945832943127"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."UQ_domains_project_domain"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_domains_status_checked"
        `);
    await queryRunner.query(`
            DROP TABLE "domains"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."domain_status"
        `);
  }
}
