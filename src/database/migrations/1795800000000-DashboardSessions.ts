import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Dashboard sessions (issue 26): the SHA-256 of the session cookie, the secret key it acts as
 * (deleted with the key), and its sliding idle expiry.
 */
export class DashboardSessions1795800000000 implements MigrationInterface {
  name = 'DashboardSessions1795800000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "dashboard_sessions" (
        "id" uuid NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "token_hash" bytea NOT NULL,
        "api_key_id" uuid NOT NULL,
        "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
        CONSTRAINT "PK_09c60e2bedb298d55d575d12503" PRIMARY KEY ("id"))`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_611ce320a648a5fb2b0087bb3e" ON "dashboard_sessions" ("token_hash")`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_595f72334fa4191483eb0fb9ae" ON "dashboard_sessions" ("api_key_id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_2c827d0d6cc55db07949a55eb6" ON "dashboard_sessions" ("expires_at")`,
    );
    await queryRunner.query(`
      ALTER TABLE "dashboard_sessions" ADD CONSTRAINT "FK_595f72334fa4191483eb0fb9ae8" FOREIGN KEY ("api_key_id")
      REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "dashboard_sessions"`);
  }
}
