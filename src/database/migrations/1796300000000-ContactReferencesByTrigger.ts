import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The partitioned tables' foreign keys (events and emails to contacts, emails
 * to email_contents) become triggers that do the same: a month can then be
 * detached and dropped without any lock on contacts or email_contents, which
 * a foreign key needs (DETACH gives the month's copy of the key its own
 * triggers on the referenced table, dropping them locks it), and which made
 * a concurrent POST /v1/track wait (docs/scaling.md, "Partitions and
 * retention").
 *
 * What each key did, the triggers do, with the same locks and error:
 * - an inserted (or re-pointed) row locks the row it references FOR KEY
 *   SHARE, as the key's check does, and fails with foreign_key_violation
 *   (23503) when it is gone: a contact deleted concurrently either waits
 *   for the insert's commit and then erases the new row too, or has
 *   committed and the insert fails;
 * - a deleted contact deletes its events and emails (ON DELETE CASCADE),
 *   through the contact_id indexes; each statement of the trigger sees rows
 *   committed before it, so an insert the delete waited for is erased;
 * - a deleted email_contents row still used by an email fails (RESTRICT).
 *
 * Row triggers on the parents are cloned onto every partition, present and
 * future. The triggers are created before the keys go, in one transaction:
 * no moment without the rule. Both steps lock the tables only briefly (no
 * row is read); lock_timeout keeps a request from queueing behind a waiting
 * DDL statement, and the migration tries again.
 */
export class ContactReferencesByTrigger1796300000000 implements MigrationInterface {
  name = 'ContactReferencesByTrigger1796300000000';
  transaction = false as const;

  async up(queryRunner: QueryRunner): Promise<void> {
    await retryOnLockTimeout(async () => {
      await queryRunner.startTransaction();
      try {
        await queryRunner.query(`SET LOCAL lock_timeout = '2s'`);
        await queryRunner.query(
          referenceCheck('mw_contact_reference_check', 'contact_id', 'contacts'),
        );
        await queryRunner.query(
          referenceCheck('mw_content_reference_check', 'content_id', 'email_contents'),
        );
        await queryRunner.query(`
          CREATE OR REPLACE FUNCTION mw_contacts_cascade_delete() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            DELETE FROM events WHERE contact_id = OLD.id;
            DELETE FROM emails WHERE contact_id = OLD.id;
            RETURN NULL;
          END $$`);
        await queryRunner.query(`
          CREATE OR REPLACE FUNCTION mw_email_contents_restrict_delete() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF EXISTS (SELECT 1 FROM emails WHERE content_id = OLD.id) THEN
              RAISE EXCEPTION 'delete on table "email_contents" violates foreign key from "emails"'
                USING ERRCODE = 'foreign_key_violation', TABLE = 'emails',
                      DETAIL = format('Key (id)=(%s) is still referenced from table "emails".', OLD.id);
            END IF;
            RETURN NULL;
          END $$`);
        await queryRunner.query(
          `CREATE TRIGGER events_contact_reference AFTER INSERT OR UPDATE OF contact_id ON events
             FOR EACH ROW EXECUTE FUNCTION mw_contact_reference_check()`,
        );
        await queryRunner.query(
          `CREATE TRIGGER emails_contact_reference AFTER INSERT OR UPDATE OF contact_id ON emails
             FOR EACH ROW EXECUTE FUNCTION mw_contact_reference_check()`,
        );
        await queryRunner.query(
          `CREATE TRIGGER emails_content_reference AFTER INSERT OR UPDATE OF content_id ON emails
             FOR EACH ROW EXECUTE FUNCTION mw_content_reference_check()`,
        );
        await queryRunner.query(
          `CREATE TRIGGER contacts_cascade_delete AFTER DELETE ON contacts
             FOR EACH ROW EXECUTE FUNCTION mw_contacts_cascade_delete()`,
        );
        await queryRunner.query(
          `CREATE TRIGGER email_contents_restrict_delete AFTER DELETE ON email_contents
             FOR EACH ROW EXECUTE FUNCTION mw_email_contents_restrict_delete()`,
        );
        for (const [table, name] of FOREIGN_KEYS)
          await queryRunner.query(`ALTER TABLE "${table}" DROP CONSTRAINT IF EXISTS "${name}"`);
        await queryRunner.commitTransaction();
      } catch (error) {
        await queryRunner.rollbackTransaction();
        throw error;
      }
    });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.startTransaction();
    try {
      await queryRunner.query(`DROP TRIGGER events_contact_reference ON events`);
      await queryRunner.query(`DROP TRIGGER emails_contact_reference ON emails`);
      await queryRunner.query(`DROP TRIGGER emails_content_reference ON emails`);
      await queryRunner.query(`DROP TRIGGER contacts_cascade_delete ON contacts`);
      await queryRunner.query(`DROP TRIGGER email_contents_restrict_delete ON email_contents`);
      await queryRunner.query(`DROP FUNCTION mw_contact_reference_check()`);
      await queryRunner.query(`DROP FUNCTION mw_content_reference_check()`);
      await queryRunner.query(`DROP FUNCTION mw_contacts_cascade_delete()`);
      await queryRunner.query(`DROP FUNCTION mw_email_contents_restrict_delete()`);
      await queryRunner.query(
        `ALTER TABLE "emails" ADD CONSTRAINT "FK_18e630371ededf594f21a818635" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE`,
      );
      await queryRunner.query(
        `ALTER TABLE "emails" ADD CONSTRAINT "FK_f7be72c08a424961ea2d8484c15" FOREIGN KEY ("content_id") REFERENCES "email_contents"("id") ON DELETE RESTRICT`,
      );
      await queryRunner.query(
        `ALTER TABLE "events" ADD CONSTRAINT "FK_a8a1a3d5f3baca233935084f081" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE`,
      );
      await queryRunner.commitTransaction();
    } catch (error) {
      await queryRunner.rollbackTransaction();
      throw error;
    }
  }
}

/**
 * A row trigger's function checking `column` as a foreign key to `referenced`(id) would: the row
 * it points at is locked FOR KEY SHARE, and a missing one fails with foreign_key_violation.
 */
function referenceCheck(name: string, column: string, referenced: string): string {
  return `
    CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.${column} IS NOT NULL THEN
        PERFORM 1 FROM ${referenced} WHERE id = NEW.${column} FOR KEY SHARE;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'insert or update on table "%" violates foreign key to "${referenced}"', TG_TABLE_NAME
            USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME,
                  DETAIL = format('Key (${column})=(%s) is not present in table "${referenced}".', NEW.${column});
        END IF;
      END IF;
      RETURN NULL;
    END $$`;
}

/** The foreign keys replaced, as the partitioning migration named them. */
const FOREIGN_KEYS: Array<[string, string]> = [
  ['events', 'FK_a8a1a3d5f3baca233935084f081'],
  ['emails', 'FK_18e630371ededf594f21a818635'],
  ['emails', 'FK_f7be72c08a424961ea2d8484c15'],
];

/**
 * Runs `step` again while it fails on lock_timeout (55P03), ten times at most, a second apart.
 * (The partitioning migration's own copy: TypeORM takes every function a migration file exports
 * for a migration, so migrations cannot share it.)
 */
async function retryOnLockTimeout(step: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await step();
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03' || attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
