import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Double opt-in: the project's setting (PATCH /project {doubleOptIn}) and one
 * row per contact that was sent a confirmation, which makes the 10-minute
 * rule one atomic statement and each confirmation link work once.
 */
export class DoubleOptIn1795820000000 implements MigrationInterface {
  name = 'DoubleOptIn1795820000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "projects" ADD "double_opt_in_enabled" boolean NOT NULL DEFAULT false`,
    );
    await queryRunner.query(`ALTER TABLE "projects" ADD "double_opt_in_template_id" uuid`);
    await queryRunner.query(
      `ALTER TABLE "projects" ADD "confirm_redirect_url" character varying(2048)`,
    );
    await queryRunner.query(
      `CREATE TABLE "opt_in_confirmations" (
        "contact_id" uuid NOT NULL,
        "project_id" uuid NOT NULL,
        "sent_at" TIMESTAMP WITH TIME ZONE NOT NULL,
        "confirmed_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "opt_in_confirmations_pkey" PRIMARY KEY ("contact_id"),
        CONSTRAINT "opt_in_confirmations_contact_id_fkey" FOREIGN KEY ("contact_id")
          REFERENCES "contacts"("id") ON DELETE CASCADE ON UPDATE NO ACTION
      )`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "opt_in_confirmations"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "confirm_redirect_url"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "double_opt_in_template_id"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "double_opt_in_enabled"`);
  }
}
