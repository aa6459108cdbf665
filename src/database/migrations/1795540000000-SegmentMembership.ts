import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Live segment membership (issue 13 item 6; SegmentMembershipService).
 *
 * - `segments.membership_kept_at`: set while an enabled SEGMENT_ENTRY/SEGMENT_EXIT
 *   workflow names the segment; `segments_membership_kept_idx` (partial, project_id)
 *   holds only those segments, so "does this project keep a segment?" is one probe
 *   of an index that is empty while no workflow uses a segment.
 * - `segment_memberships`: the members of kept segments, erased with the segment
 *   or the contact.
 * - `segment_membership_dirty`: contacts to re-evaluate, an append-only queue
 *   (no unique contact id: a marking never waits on a row the evaluator is
 *   deleting; the evaluator folds duplicates).
 * - Statement-level triggers mark the changed contacts in the transaction of the
 *   change: contacts INSERT and UPDATE (create, PATCH, import, track merges,
 *   unsubscribe, suppress), events INSERT (tracks, email and subscription events;
 *   not `segment.*`, the evaluator's own, which would loop). Only rows of projects
 *   with a kept segment are marked, and a statement that marked any also sends
 *   NOTIFY mw_segments_dirty (delivered at commit; one per transaction) to wake
 *   the evaluator in the worker processes.
 */
export class SegmentMembership1795540000000 implements MigrationInterface {
  name = 'SegmentMembership1795540000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "segment_memberships" (
                "segment_id" uuid NOT NULL,
                "contact_id" uuid NOT NULL,
                "project_id" uuid NOT NULL,
                "entered_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "segment_memberships_pkey" PRIMARY KEY ("segment_id", "contact_id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "segment_memberships_contact_id_idx" ON "segment_memberships" ("contact_id")
        `);
    await queryRunner.query(`
            CREATE TABLE "segment_membership_dirty" (
                "id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
                "contact_id" uuid NOT NULL,
                "project_id" uuid NOT NULL,
                "marked_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "segment_membership_dirty_pkey" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            ALTER TABLE "segments"
            ADD "membership_kept_at" TIMESTAMP WITH TIME ZONE
        `);
    await queryRunner.query(`
            ALTER TABLE "segment_memberships"
            ADD CONSTRAINT "segment_memberships_segment_id_fkey" FOREIGN KEY ("segment_id") REFERENCES "segments"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "segment_memberships"
            ADD CONSTRAINT "segment_memberships_contact_id_fkey" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    // Hand-written (synchronize: false on the entity): only kept segments are in it.
    await queryRunner.query(`
            CREATE INDEX "segments_membership_kept_idx" ON "segments" ("project_id") WHERE "membership_kept_at" IS NOT NULL
        `);
    // The first test is one probe of that (usually empty) index: a statement of a deployment where
    // no workflow uses a segment stops there. Otherwise each row is checked against its project.
    await queryRunner.query(`
            CREATE FUNCTION "segment_membership_mark_contacts"() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM "segments" s WHERE s."membership_kept_at" IS NOT NULL) THEN
                    RETURN NULL;
                END IF;
                INSERT INTO "segment_membership_dirty" ("contact_id", "project_id")
                SELECT n."id", n."project_id" FROM changed_contacts n
                WHERE EXISTS (SELECT 1 FROM "segments" s
                              WHERE s."project_id" = n."project_id" AND s."membership_kept_at" IS NOT NULL);
                IF FOUND THEN
                    PERFORM pg_notify('mw_segments_dirty', '');
                END IF;
                RETURN NULL;
            END
            $$
        `);
    await queryRunner.query(`
            CREATE FUNCTION "segment_membership_mark_events"() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM "segments" s WHERE s."membership_kept_at" IS NOT NULL) THEN
                    RETURN NULL;
                END IF;
                INSERT INTO "segment_membership_dirty" ("contact_id", "project_id")
                SELECT DISTINCT e."contact_id", e."project_id" FROM new_events e
                WHERE e."contact_id" IS NOT NULL
                  AND NOT starts_with(e."name", 'segment.')
                  AND EXISTS (SELECT 1 FROM "segments" s
                              WHERE s."project_id" = e."project_id" AND s."membership_kept_at" IS NOT NULL);
                IF FOUND THEN
                    PERFORM pg_notify('mw_segments_dirty', '');
                END IF;
                RETURN NULL;
            END
            $$
        `);
    // INSERT ... ON CONFLICT DO UPDATE (upsert_contacts) fires both: the inserted rows in one,
    // the updated rows in the other. A trigger with transition tables takes one event only.
    await queryRunner.query(`
            CREATE TRIGGER "contacts_segment_membership_insert" AFTER INSERT ON "contacts"
            REFERENCING NEW TABLE AS changed_contacts FOR EACH STATEMENT EXECUTE FUNCTION "segment_membership_mark_contacts"()
        `);
    await queryRunner.query(`
            CREATE TRIGGER "contacts_segment_membership_update" AFTER UPDATE ON "contacts"
            REFERENCING NEW TABLE AS changed_contacts FOR EACH STATEMENT EXECUTE FUNCTION "segment_membership_mark_contacts"()
        `);
    await queryRunner.query(`
            CREATE TRIGGER "events_segment_membership" AFTER INSERT ON "events"
            REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION "segment_membership_mark_events"()
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "events_segment_membership" ON "events"`);
    await queryRunner.query(`DROP TRIGGER "contacts_segment_membership_update" ON "contacts"`);
    await queryRunner.query(`DROP TRIGGER "contacts_segment_membership_insert" ON "contacts"`);
    await queryRunner.query(`DROP FUNCTION "segment_membership_mark_events"()`);
    await queryRunner.query(`DROP FUNCTION "segment_membership_mark_contacts"()`);
    await queryRunner.query(`DROP INDEX "public"."segments_membership_kept_idx"`);
    await queryRunner.query(`
            ALTER TABLE "segment_memberships" DROP CONSTRAINT "segment_memberships_contact_id_fkey"
        `);
    await queryRunner.query(`
            ALTER TABLE "segment_memberships" DROP CONSTRAINT "segment_memberships_segment_id_fkey"
        `);
    await queryRunner.query(`
            ALTER TABLE "segments" DROP COLUMN "membership_kept_at"
        `);
    await queryRunner.query(`
            DROP TABLE "segment_membership_dirty"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."segment_memberships_contact_id_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "segment_memberships"
        `);
  }
}
