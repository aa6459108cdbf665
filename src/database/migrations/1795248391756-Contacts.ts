import { MigrationInterface, QueryRunner } from 'typeorm';

export class Contacts1795248391756 implements MigrationInterface {
  name = 'Contacts1795248391756';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Trigram search on contacts.email (GET /contacts?search=).
    await queryRunner.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    await queryRunner.query(`
            CREATE TABLE "contact_imports" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "status" character varying(20) NOT NULL,
                "format" character varying(10) NOT NULL,
                "total" integer NOT NULL,
                "processed" integer NOT NULL DEFAULT '0',
                "created" integer NOT NULL DEFAULT '0',
                "updated" integer NOT NULL DEFAULT '0',
                "failed" integer NOT NULL DEFAULT '0',
                "errors" jsonb NOT NULL DEFAULT '[]',
                "chunk_count" integer NOT NULL,
                "next_chunk" integer NOT NULL DEFAULT '0',
                "finished_at" TIMESTAMP WITH TIME ZONE,
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_4297d9cdb758eea151bbb09dddb" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "contact_imports_project_id_id_idx" ON "contact_imports" ("project_id", "id")
        `);
    await queryRunner.query(`
            CREATE TABLE "contact_import_chunks" (
                "import_id" uuid NOT NULL,
                "seq" integer NOT NULL,
                "rows" jsonb NOT NULL,
                CONSTRAINT "PK_cad2b14ef77fac246fd2f86f8ad" PRIMARY KEY ("import_id", "seq")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "contacts" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "email" character varying(320) NOT NULL,
                "subscribed" boolean NOT NULL DEFAULT true,
                "suppressed" boolean NOT NULL DEFAULT false,
                "data" jsonb NOT NULL DEFAULT '{}',
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_b99cd40cfd66a99f1571f4f72e6" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "contacts_project_id_subscribed_id_idx" ON "contacts" ("project_id", "subscribed", "id")
        `);
    await queryRunner.query(`
            CREATE INDEX "contacts_project_id_id_idx" ON "contacts" ("project_id", "id")
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "contacts_project_id_email_key" ON "contacts" ("project_id", "email")
        `);
    await queryRunner.query(`
            CREATE TABLE "event_name_stats" (
                "project_id" uuid NOT NULL,
                "name" character varying(100) NOT NULL,
                "shard" smallint NOT NULL,
                "count" bigint NOT NULL DEFAULT '0',
                "last_seen_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "PK_6892d309bdcbc4e6afd848da78b" PRIMARY KEY ("project_id", "name", "shard")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "events" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "contact_id" uuid NOT NULL,
                "email_id" uuid,
                "name" character varying(100) NOT NULL,
                "data" jsonb NOT NULL DEFAULT '{}',
                CONSTRAINT "PK_40731c7151fe4be3116e45ddf73" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "events_contact_id_created_at_idx" ON "events" ("contact_id", "created_at")
        `);
    await queryRunner.query(`
            CREATE INDEX "events_project_id_name_created_at_idx" ON "events" ("project_id", "name", "created_at")
        `);
    await queryRunner.query(`
            CREATE INDEX "events_project_id_created_at_idx" ON "events" ("project_id", "created_at")
        `);
    await queryRunner.query(`
            ALTER TABLE "contact_imports"
            ADD CONSTRAINT "FK_dcd1bdb8cabcb0cd8c6d6e4b0b7" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "contact_import_chunks"
            ADD CONSTRAINT "FK_4b9fb7ed64ec4b8119aff4d0316" FOREIGN KEY ("import_id") REFERENCES "contact_imports"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "contacts"
            ADD CONSTRAINT "FK_793599cd340367a166900a954f9" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "event_name_stats"
            ADD CONSTRAINT "FK_76debb207a971ff85b396bede98" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "events"
            ADD CONSTRAINT "FK_a8a1a3d5f3baca233935084f081" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    // Hand-written indexes TypeORM cannot express (declared with synchronize:false on the entities).
    await queryRunner.query(`
            CREATE INDEX "contacts_email_trgm_idx" ON "contacts" USING gin ("email" gin_trgm_ops)
        `);
    // Default jsonb_ops (not jsonb_path_ops): segment rules need key existence (?) as well as containment (@>).
    await queryRunner.query(`
            CREATE INDEX "contacts_data_gin_idx" ON "contacts" USING gin ("data")
        `);
    // GET /events/names reads running totals instead of aggregating millions of events.
    // Inserts add to one of 16 shard rows per (project, name), chosen by transaction id so
    // concurrent transactions rarely wait on the same row and one transaction uses one shard.
    await queryRunner.query(`
            CREATE FUNCTION "event_name_stats_on_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO "event_name_stats" AS s ("project_id", "name", "shard", "count", "last_seen_at")
                SELECT n."project_id", n."name", (txid_current() % 16)::smallint, count(*), max(n."created_at")
                FROM new_events n
                GROUP BY n."project_id", n."name"
                ORDER BY n."project_id", n."name"
                ON CONFLICT ("project_id", "name", "shard") DO UPDATE
                    SET "count" = s."count" + EXCLUDED."count",
                        "last_seen_at" = GREATEST(s."last_seen_at", EXCLUDED."last_seen_at");
                RETURN NULL;
            END
            $$
        `);
    await queryRunner.query(`
            CREATE TRIGGER "events_name_stats_insert" AFTER INSERT ON "events"
            REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION "event_name_stats_on_insert"()
        `);
    // Deletes (a contact erased with its events, cascades) subtract from the lowest shard and
    // recompute last_seen_at from what is left; names with no events left disappear.
    await queryRunner.query(`
            CREATE FUNCTION "event_name_stats_on_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE "event_name_stats" s
                SET "count" = s."count" - g.n
                FROM (SELECT o."project_id", o."name", count(*) AS n FROM old_events o GROUP BY 1, 2) g
                WHERE s."project_id" = g."project_id" AND s."name" = g."name"
                  AND s."shard" = (SELECT min(m."shard") FROM "event_name_stats" m
                                   WHERE m."project_id" = g."project_id" AND m."name" = g."name");
                UPDATE "event_name_stats" s
                SET "last_seen_at" = (SELECT max(e."created_at") FROM "events" e
                                      WHERE e."project_id" = s."project_id" AND e."name" = s."name")
                WHERE (s."project_id", s."name") IN (SELECT DISTINCT o."project_id", o."name" FROM old_events o);
                DELETE FROM "event_name_stats" s
                WHERE s."last_seen_at" IS NULL
                  AND (s."project_id", s."name") IN (SELECT DISTINCT o."project_id", o."name" FROM old_events o);
                RETURN NULL;
            END
            $$
        `);
    await queryRunner.query(`
            CREATE TRIGGER "events_name_stats_delete" AFTER DELETE ON "events"
            REFERENCING OLD TABLE AS old_events FOR EACH STATEMENT EXECUTE FUNCTION "event_name_stats_on_delete"()
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER IF EXISTS "events_name_stats_delete" ON "events"`);
    await queryRunner.query(`DROP TRIGGER IF EXISTS "events_name_stats_insert" ON "events"`);
    await queryRunner.query(`DROP FUNCTION IF EXISTS "event_name_stats_on_delete"()`);
    await queryRunner.query(`DROP FUNCTION IF EXISTS "event_name_stats_on_insert"()`);
    await queryRunner.query(`DROP INDEX IF EXISTS "public"."contacts_data_gin_idx"`);
    await queryRunner.query(`DROP INDEX IF EXISTS "public"."contacts_email_trgm_idx"`);
    await queryRunner.query(`
            ALTER TABLE "events" DROP CONSTRAINT "FK_a8a1a3d5f3baca233935084f081"
        `);
    await queryRunner.query(`
            ALTER TABLE "event_name_stats" DROP CONSTRAINT "FK_76debb207a971ff85b396bede98"
        `);
    await queryRunner.query(`
            ALTER TABLE "contacts" DROP CONSTRAINT "FK_793599cd340367a166900a954f9"
        `);
    await queryRunner.query(`
            ALTER TABLE "contact_import_chunks" DROP CONSTRAINT "FK_4b9fb7ed64ec4b8119aff4d0316"
        `);
    await queryRunner.query(`
            ALTER TABLE "contact_imports" DROP CONSTRAINT "FK_dcd1bdb8cabcb0cd8c6d6e4b0b7"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."events_project_id_created_at_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."events_project_id_name_created_at_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."events_contact_id_created_at_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "events"
        `);
    await queryRunner.query(`
            DROP TABLE "event_name_stats"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."contacts_project_id_email_key"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."contacts_project_id_id_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."contacts_project_id_subscribed_id_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "contacts"
        `);
    await queryRunner.query(`
            DROP TABLE "contact_import_chunks"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."contact_imports_project_id_id_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "contact_imports"
        `);
  }
}
