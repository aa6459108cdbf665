import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The batch statement of POST /v1/track's group commit (src/tracking/track-writer.ts)
 * as a function, for one reason: `SET lock_timeout` on the function applies to
 * that statement alone, in one round trip. A batch that meets a contact locked
 * by someone else (an import chunk, a send) gives up after 100 ms instead of
 * holding up every track behind it, and gives up long before Postgres's 1 s
 * deadlock check could pick the other transaction as the victim; the writer
 * then writes its tracks one at a time.
 *
 * $1 is a JSON array of {ord, contact_id, project_id, email, set_data,
 * remove_keys, event_id, name, event_data} with distinct (project_id, email).
 * Contacts are written in (project_id, email COLLATE "C") order, the one order
 * every multi-contact writer uses (imports, sends), so they cannot deadlock on
 * contacts. Same semantics as the single-track statement: a new contact is
 * subscribed with `set_data`; an existing one gets `(data || set_data) - remove_keys`.
 */
export class TrackBatches1795260000000 implements MigrationInterface {
  name = 'TrackBatches1795260000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE FUNCTION "track_contacts_and_events"("batch" jsonb)
            RETURNS TABLE ("ord" int, "contactId" uuid, "email" text, "eventId" uuid, "createdAt" timestamptz)
            LANGUAGE sql VOLATILE
            SET lock_timeout = '100ms'
            AS $$
                WITH x AS MATERIALIZED (
                    SELECT * FROM jsonb_to_recordset("batch") AS x(
                        ord int, contact_id uuid, project_id uuid, email text, set_data jsonb,
                        remove_keys text[], event_id uuid, name text, event_data jsonb)
                ), c AS (
                    INSERT INTO contacts AS c (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
                    SELECT x.contact_id, x.project_id, x.email, true, false, x.set_data, now(), now()
                    FROM x ORDER BY x.project_id, x.email COLLATE "C"
                    ON CONFLICT (project_id, email) DO UPDATE
                        SET data = (c.data || excluded.data) - (
                                SELECT x.remove_keys FROM x
                                WHERE x.project_id = excluded.project_id AND x.email = excluded.email
                            ),
                            updated_at = now()
                    RETURNING c.id, c.project_id, c.email
                ), e AS (
                    INSERT INTO events (id, project_id, contact_id, email_id, name, data, created_at)
                    SELECT x.event_id, x.project_id, c.id, NULL, x.name, x.event_data, now()
                    FROM x JOIN c ON c.project_id = x.project_id AND c.email = x.email
                    RETURNING id, created_at
                )
                SELECT x.ord, c.id, c.email::text, e.id, e.created_at
                FROM x
                JOIN c ON c.project_id = x.project_id AND c.email = x.email
                JOIN e ON e.id = x.event_id
            $$
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION IF EXISTS "track_contacts_and_events"(jsonb)`);
  }
}
