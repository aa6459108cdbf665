import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Segments, plus the SQL helper the condition compiler uses for dates kept
 * in contact data: it answers NULL for anything that is not a valid
 * ISO 8601 date instead of raising (a bad value in one contact's data must
 * not fail a whole segment query). No exception block, so it stays
 * PARALLEL SAFE; a date without an offset is read as UTC, so the result
 * does not depend on the session time zone.
 */
export class Segments1795248537491 implements MigrationInterface {
  name = 'Segments1795248537491';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "segments" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "name" character varying(200) NOT NULL,
                "description" text,
                "condition" jsonb NOT NULL,
                "segment_refs" uuid array NOT NULL DEFAULT '{}',
                "member_count" integer,
                "member_count_at" TIMESTAMP WITH TIME ZONE,
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_beff1eec19679fe8ad4f291f04e" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "segments_project_id_id_idx" ON "segments" ("project_id", "id")
        `);
    await queryRunner.query(`
            CREATE INDEX "segments_segment_refs_idx" ON "segments" USING gin ("segment_refs")
        `);
    await queryRunner.query(`
            ALTER TABLE "segments"
            ADD CONSTRAINT "FK_ca5d1f0049115a81dc6df7216b8" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            CREATE OR REPLACE FUNCTION "mailwright_try_timestamptz"(v text) RETURNS timestamptz
            LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
            DECLARE
                m text[];
            BEGIN
                m := regexp_match(v, '^\\s*(\\d{4})-(\\d{2})-(\\d{2})(?:[T ](\\d{2}):(\\d{2})(?::(\\d{2})(?:\\.\\d{1,6})?)?)?(Z|z|([+-])(\\d{2})(?::?(\\d{2}))?)?\\s*$');
                -- Separate IFs: make_date below must only see a month and year already known to be valid.
                IF m IS NULL OR m[1]::int < 1 OR m[2]::int NOT BETWEEN 1 AND 12 THEN
                    RETURN NULL;
                END IF;
                IF m[3]::int < 1
                    OR m[3]::int > extract(day FROM make_date(m[1]::int, m[2]::int, 1) + interval '1 month - 1 day')
                    OR coalesce(m[4]::int, 0) > 23 OR coalesce(m[5]::int, 0) > 59 OR coalesce(m[6]::int, 0) > 59
                    OR coalesce(m[9]::int, 0) > 15 OR coalesce(m[10]::int, 0) > 59 THEN
                    RETURN NULL;
                END IF;
                IF m[7] IS NULL THEN
                    RETURN (btrim(v)::timestamp) AT TIME ZONE 'UTC';
                END IF;
                RETURN btrim(v)::timestamptz;
            END
            $$
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP FUNCTION IF EXISTS "mailwright_try_timestamptz"(text)
        `);
    await queryRunner.query(`
            ALTER TABLE "segments" DROP CONSTRAINT "FK_ca5d1f0049115a81dc6df7216b8"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."segments_segment_refs_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."segments_project_id_id_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "segments"
        `);
  }
}
