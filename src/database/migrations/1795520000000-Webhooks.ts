import { MigrationInterface, QueryRunner } from 'typeorm';

export class Webhooks1795520000000 implements MigrationInterface {
  name = 'Webhooks1795520000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "webhook_endpoints" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "url" character varying(2048) NOT NULL,
                "events" text array NOT NULL,
                "description" text,
                "enabled" boolean NOT NULL DEFAULT true,
                "secret_sealed" text NOT NULL,
                "failing_since" TIMESTAMP WITH TIME ZONE,
                "disabled_reason" character varying(200),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_054c4cfb95223732f5939d2d546" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "webhook_endpoints_project_id_id_idx" ON "webhook_endpoints" ("project_id", "id")
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."webhook_delivery_status" AS ENUM('PENDING', 'SUCCEEDED', 'FAILED')
        `);
    await queryRunner.query(`
            CREATE TABLE "webhook_deliveries" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "endpoint_id" uuid NOT NULL,
                "event_id" uuid,
                "event_type" character varying(100) NOT NULL,
                "payload" text NOT NULL,
                "status" "public"."webhook_delivery_status" NOT NULL DEFAULT 'PENDING',
                "attempts" integer NOT NULL DEFAULT '0',
                "response_status" integer,
                "last_error" text,
                "last_attempt_at" TIMESTAMP WITH TIME ZONE,
                "next_attempt_at" TIMESTAMP WITH TIME ZONE DEFAULT now(),
                "retries" integer NOT NULL DEFAULT '0',
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_535dd409947fb6d8fc6dfc0112a" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "webhook_deliveries_endpoint_id_id_idx" ON "webhook_deliveries" ("endpoint_id", "id")
        `);
    await queryRunner.query(`
            CREATE INDEX "webhook_deliveries_event_id_idx" ON "webhook_deliveries" ("event_id")
        `);
    await queryRunner.query(`
            ALTER TABLE "webhook_endpoints"
            ADD CONSTRAINT "FK_0ab4ea705a813fdebcc2b12ef2f" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "webhook_deliveries"
            ADD CONSTRAINT "FK_0b882c26a9b91c26e6e86b4867c" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    // Hand-written: a UUIDv7 generator for rows written by SQL (newest-first lists order by id),
    // the dispatch sweep's partial index, and the outbox trigger.
    await queryRunner.query(`
            CREATE FUNCTION mw_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
              SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                       PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                       FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
            $$
        `);
    await queryRunner.query(`
            CREATE INDEX "webhook_deliveries_pending_idx" ON "webhook_deliveries" ("next_attempt_at") WHERE status = 'PENDING'
        `);
    // Which events leave the system, and whether an endpoint's filter takes one.
    await queryRunner.query(`
            CREATE FUNCTION webhook_deliverable(name text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
              SELECT starts_with(name, 'email.') OR starts_with(name, 'contact.')
                  OR name IN ('campaign.started', 'campaign.sent', 'campaign.cancelled', 'domain.verified',
                              'domain.failed', 'workflow.execution.failed', 'webhook.disabled')
            $$
        `);
    await queryRunner.query(`
            CREATE FUNCTION webhook_event_matches(patterns text[], name text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
              SELECT EXISTS (SELECT 1 FROM unnest(patterns) AS p
                              WHERE p = '*' OR p = name OR (right(p, 1) = '*' AND starts_with(name, left(p, -1))))
            $$
        `);
    // The outbox: every INSERT into events (one statement per track batch, per send, per
    // delivery status change) writes the deliveries of the project's enabled endpoints whose
    // filter matches, in the same transaction. With no endpoint it is one empty join.
    await queryRunner.query(`
            CREATE FUNCTION webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, event_type, payload)
              SELECT mw_uuid_v7(), e.project_id, w.id, e.id, e.name,
                     json_build_object(
                       'type', e.name,
                       'timestamp', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                       'data', e.data || jsonb_build_object('eventId', e.id, 'contactId', e.contact_id, 'emailId', e.email_id,
                                                            'email', (SELECT c.email FROM contacts c WHERE c.id = e.contact_id)))::text
                FROM inserted e
                JOIN webhook_endpoints w ON w.project_id = e.project_id AND w.enabled
               WHERE webhook_deliverable(e.name) AND webhook_event_matches(w.events, e.name)
               ORDER BY e.id, w.id;
              RETURN NULL;
            END $$
        `);
    await queryRunner.query(`
            CREATE TRIGGER events_webhook_outbox AFTER INSERT ON events
              REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION webhook_outbox()
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER events_webhook_outbox ON events`);
    await queryRunner.query(`DROP FUNCTION webhook_outbox()`);
    await queryRunner.query(`DROP FUNCTION webhook_event_matches(text[], text)`);
    await queryRunner.query(`DROP FUNCTION webhook_deliverable(text)`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_pending_idx"`);
    await queryRunner.query(`DROP FUNCTION mw_uuid_v7()`);
    await queryRunner.query(`
            ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_0b882c26a9b91c26e6e86b4867c"
        `);
    await queryRunner.query(`
            ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "FK_0ab4ea705a813fdebcc2b12ef2f"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."webhook_deliveries_event_id_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."webhook_deliveries_endpoint_id_id_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "webhook_deliveries"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."webhook_delivery_status"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."webhook_endpoints_project_id_id_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "webhook_endpoints"
        `);
  }
}
