import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * POST /project/keys takes an optional name, so a listing of several keys
 * says which is which (the dashboard's Settings page) before one is revoked.
 */
export class ApiKeyNames1795920000000 implements MigrationInterface {
  name = 'ApiKeyNames1795920000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "name" character varying(100)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "name"`);
  }
}
