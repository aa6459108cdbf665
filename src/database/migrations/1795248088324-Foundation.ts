import { MigrationInterface, QueryRunner } from 'typeorm';

export class Foundation1795248088324 implements MigrationInterface {
  name = 'Foundation1795248088324';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "projects" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "name" character varying(200) NOT NULL,
                "enabled" boolean NOT NULL DEFAULT true,
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_6271df0a7aed1d6c0691ce6ac50" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."api_key_type" AS ENUM('SECRET', 'PUBLIC')
        `);
    await queryRunner.query(`
            CREATE TABLE "api_keys" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "type" "public"."api_key_type" NOT NULL,
                "prefix" character varying(16) NOT NULL,
                "hash" bytea NOT NULL,
                "revoked_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "PK_5c8a79801b44bd27b79228e1dad" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_f5de07dbb229225e2be643ff3d" ON "api_keys" ("project_id")
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "IDX_598a14447f592c12d1fe22ba91" ON "api_keys" ("hash")
        `);
    await queryRunner.query(`
            ALTER TABLE "api_keys"
            ADD CONSTRAINT "FK_f5de07dbb229225e2be643ff3d0" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "api_keys" DROP CONSTRAINT "FK_f5de07dbb229225e2be643ff3d0"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_598a14447f592c12d1fe22ba91"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_f5de07dbb229225e2be643ff3d"
        `);
    await queryRunner.query(`
            DROP TABLE "api_keys"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."api_key_type"
        `);
    await queryRunner.query(`
            DROP TABLE "projects"
        `);
  }
}
