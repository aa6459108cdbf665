import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Provider webhooks (issue 25): per project and provider, the unguessable id
 * of its `/inbound/{provider}/{inboundId}` URL and the provider's credentials,
 * sealed with APP_SECRET.
 */
export class ProviderHooks1795740000000 implements MigrationInterface {
  name = 'ProviderHooks1795740000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "provider_hooks" (
        "id" uuid NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "project_id" uuid NOT NULL,
        "provider" character varying(16) NOT NULL,
        "inbound_id" character varying(64) NOT NULL,
        "credentials_sealed" text,
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_provider_hooks" PRIMARY KEY ("id"))`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "provider_hooks_project_id_provider_key" ON "provider_hooks" ("project_id", "provider")`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "provider_hooks_inbound_id_key" ON "provider_hooks" ("inbound_id")`,
    );
    await queryRunner.query(`
      ALTER TABLE "provider_hooks" ADD CONSTRAINT "FK_provider_hooks_project" FOREIGN KEY ("project_id")
      REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "provider_hooks"`);
  }
}
