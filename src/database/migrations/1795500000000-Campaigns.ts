import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Campaigns: the campaigns table, their counters (maintained by triggers on
 * emails, see CampaignCounter), shared email content rendered at delivery,
 * the CANCELLED email status, one email per (campaign, contact), and project
 * events (events.contact_id nullable for `campaign.*`).
 */
export class Campaigns1795500000000 implements MigrationInterface {
  name = 'Campaigns1795500000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TYPE "public"."campaign_audience_type" AS ENUM('ALL', 'SEGMENT', 'FILTERED')`,
    );
    await queryRunner.query(
      `CREATE TYPE "public"."campaign_status" AS ENUM('DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED')`,
    );
    await queryRunner.query(`
      CREATE TABLE "campaigns" (
        "id" uuid NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "project_id" uuid NOT NULL,
        "name" character varying(200) NOT NULL,
        "description" text,
        "subject" text NOT NULL,
        "body" text NOT NULL,
        "from_email" character varying(320) NOT NULL,
        "from_name" character varying(200),
        "reply_to" character varying(320),
        "audience_type" "public"."campaign_audience_type" NOT NULL,
        "segment_id" uuid,
        "audience_filter" jsonb,
        "track_opens" boolean NOT NULL DEFAULT true,
        "track_clicks" boolean NOT NULL DEFAULT true,
        "status" "public"."campaign_status" NOT NULL DEFAULT 'DRAFT',
        "scheduled_at" TIMESTAMP WITH TIME ZONE,
        "started_at" TIMESTAMP WITH TIME ZONE,
        "finished_at" TIMESTAMP WITH TIME ZONE,
        "cancelled_at" TIMESTAMP WITH TIME ZONE,
        "recipient_count" integer,
        "content_id" uuid,
        "fanout_cursor" uuid,
        "fanout_done" boolean NOT NULL DEFAULT false,
        "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        CONSTRAINT "PK_831e3fcd4fc45b4e4c3f57a9ee4" PRIMARY KEY ("id")
      )`);
    await queryRunner.query(
      `CREATE INDEX "campaigns_open_idx" ON "campaigns" ("status") WHERE status IN ('SCHEDULED', 'SENDING')`,
    );
    await queryRunner.query(
      `CREATE INDEX "campaigns_project_id_id_idx" ON "campaigns" ("project_id", "id")`,
    );
    await queryRunner.query(`
      CREATE TABLE "campaign_counters" (
        "campaign_id" uuid NOT NULL,
        "slot" smallint NOT NULL,
        "queued" integer NOT NULL DEFAULT '0',
        "sending" integer NOT NULL DEFAULT '0',
        "sent" integer NOT NULL DEFAULT '0',
        "failed" integer NOT NULL DEFAULT '0',
        "bounced" integer NOT NULL DEFAULT '0',
        "suppressed" integer NOT NULL DEFAULT '0',
        "cancelled" integer NOT NULL DEFAULT '0',
        "opened" integer NOT NULL DEFAULT '0',
        "clicked" integer NOT NULL DEFAULT '0',
        "unsubscribed" integer NOT NULL DEFAULT '0',
        CONSTRAINT "PK_2947c3d3dd935f5cadf49fb2beb" PRIMARY KEY ("campaign_id", "slot")
      )`);
    await queryRunner.query(`
      CREATE TABLE "email_contents" (
        "id" uuid NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "project_id" uuid NOT NULL,
        "subject" text NOT NULL,
        "body" text NOT NULL,
        CONSTRAINT "PK_505f1c25ec2ec52c23eb5de97e5" PRIMARY KEY ("id")
      )`);
    await queryRunner.query(`ALTER TABLE "emails" ADD "content_id" uuid`);
    await queryRunner.query(`ALTER TABLE "emails" ADD "unsubscribed_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "emails" ALTER COLUMN "html" DROP NOT NULL`);
    await queryRunner.query(`ALTER TABLE "emails" ALTER COLUMN "text" DROP NOT NULL`);
    await queryRunner.query(`ALTER TABLE "events" ALTER COLUMN "contact_id" DROP NOT NULL`);
    await queryRunner.query(
      `ALTER TYPE "public"."email_status" ADD VALUE IF NOT EXISTS 'CANCELLED'`,
    );
    await queryRunner.query(`
      CREATE UNIQUE INDEX "emails_campaign_id_contact_id_key" ON "emails" ("campaign_id", "contact_id")
      WHERE campaign_id IS NOT NULL`);
    await queryRunner.query(`
      ALTER TABLE "campaigns" ADD CONSTRAINT "FK_3093e59f7d8315d7d0ea8dbc7da" FOREIGN KEY ("project_id")
      REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`
      ALTER TABLE "campaign_counters" ADD CONSTRAINT "FK_a7230408e2d53ba65dba98e47d8" FOREIGN KEY ("campaign_id")
      REFERENCES "campaigns"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`
      ALTER TABLE "email_contents" ADD CONSTRAINT "FK_caa9963f87a9d114377c44d46f0" FOREIGN KEY ("project_id")
      REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`
      ALTER TABLE "emails" ADD CONSTRAINT "FK_f7be72c08a424961ea2d8484c15" FOREIGN KEY ("content_id")
      REFERENCES "email_contents"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`);

    // Counters (hand-written; see CampaignCounter). The counter rows of a
    // campaign exist before its first email (created when it starts), so the
    // triggers only UPDATE. Inserts are counted once per statement (a fan-out
    // batch is one statement); changes and deletes once per row, and only for
    // campaign rows whose status or first open/click/unsubscribe changed.
    await queryRunner.query(`
      CREATE FUNCTION campaign_counters_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE campaign_counters k
           SET queued = k.queued + n.queued, sending = k.sending + n.sending, sent = k.sent + n.sent,
               failed = k.failed + n.failed, bounced = k.bounced + n.bounced, suppressed = k.suppressed + n.suppressed,
               cancelled = k.cancelled + n.cancelled, opened = k.opened + n.opened, clicked = k.clicked + n.clicked,
               unsubscribed = k.unsubscribed + n.unsubscribed
          FROM (SELECT campaign_id,
                       count(*) FILTER (WHERE status = 'QUEUED') AS queued,
                       count(*) FILTER (WHERE status = 'SENDING') AS sending,
                       count(*) FILTER (WHERE status = 'SENT') AS sent,
                       count(*) FILTER (WHERE status = 'FAILED') AS failed,
                       count(*) FILTER (WHERE status = 'BOUNCED') AS bounced,
                       count(*) FILTER (WHERE status = 'SUPPRESSED') AS suppressed,
                       count(*) FILTER (WHERE status::text = 'CANCELLED') AS cancelled,
                       count(*) FILTER (WHERE opened_at IS NOT NULL) AS opened,
                       count(*) FILTER (WHERE clicked_at IS NOT NULL) AS clicked,
                       count(*) FILTER (WHERE unsubscribed_at IS NOT NULL) AS unsubscribed
                  FROM inserted WHERE campaign_id IS NOT NULL GROUP BY campaign_id) n
         WHERE k.campaign_id = n.campaign_id AND k.slot = 0;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION campaign_counters_on_change() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        o emails;
        n emails;
      BEGIN
        IF TG_OP = 'DELETE' THEN o := OLD; ELSE o := OLD; n := NEW; END IF;
        UPDATE campaign_counters SET
          queued = queued + (n.status IS NOT DISTINCT FROM 'QUEUED')::int - (o.status = 'QUEUED')::int,
          sending = sending + (n.status IS NOT DISTINCT FROM 'SENDING')::int - (o.status = 'SENDING')::int,
          sent = sent + (n.status IS NOT DISTINCT FROM 'SENT')::int - (o.status = 'SENT')::int,
          failed = failed + (n.status IS NOT DISTINCT FROM 'FAILED')::int - (o.status = 'FAILED')::int,
          bounced = bounced + (n.status IS NOT DISTINCT FROM 'BOUNCED')::int - (o.status = 'BOUNCED')::int,
          suppressed = suppressed + (n.status IS NOT DISTINCT FROM 'SUPPRESSED')::int - (o.status = 'SUPPRESSED')::int,
          cancelled = cancelled + (n.status::text IS NOT DISTINCT FROM 'CANCELLED')::int - (o.status::text = 'CANCELLED')::int,
          opened = opened + (n.opened_at IS NOT NULL)::int - (o.opened_at IS NOT NULL)::int,
          clicked = clicked + (n.clicked_at IS NOT NULL)::int - (o.clicked_at IS NOT NULL)::int,
          unsubscribed = unsubscribed + (n.unsubscribed_at IS NOT NULL)::int - (o.unsubscribed_at IS NOT NULL)::int
        WHERE campaign_id = o.campaign_id AND slot = get_byte(uuid_send(o.id), 15) % ${COUNTER_SLOTS};
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER emails_campaign_counters_insert AFTER INSERT ON emails
        REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION campaign_counters_on_insert()`);
    await queryRunner.query(`
      CREATE TRIGGER emails_campaign_counters_update AFTER UPDATE ON emails FOR EACH ROW
        WHEN (OLD.campaign_id IS NOT NULL AND (OLD.status IS DISTINCT FROM NEW.status
              OR (OLD.opened_at IS NULL) <> (NEW.opened_at IS NULL)
              OR (OLD.clicked_at IS NULL) <> (NEW.clicked_at IS NULL)
              OR (OLD.unsubscribed_at IS NULL) <> (NEW.unsubscribed_at IS NULL)))
        EXECUTE FUNCTION campaign_counters_on_change()`);
    await queryRunner.query(`
      CREATE TRIGGER emails_campaign_counters_delete AFTER DELETE ON emails FOR EACH ROW
        WHEN (OLD.campaign_id IS NOT NULL) EXECUTE FUNCTION campaign_counters_on_change()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER emails_campaign_counters_delete ON emails`);
    await queryRunner.query(`DROP TRIGGER emails_campaign_counters_update ON emails`);
    await queryRunner.query(`DROP TRIGGER emails_campaign_counters_insert ON emails`);
    await queryRunner.query(`DROP FUNCTION campaign_counters_on_change()`);
    await queryRunner.query(`DROP FUNCTION campaign_counters_on_insert()`);
    await queryRunner.query(
      `ALTER TABLE "emails" DROP CONSTRAINT "FK_f7be72c08a424961ea2d8484c15"`,
    );
    await queryRunner.query(`DROP INDEX "public"."emails_campaign_id_contact_id_key"`);
    // The CANCELLED email status stays (Postgres cannot drop an enum value); such rows become FAILED.
    await queryRunner.query(`UPDATE emails SET status = 'FAILED' WHERE status::text = 'CANCELLED'`);
    await queryRunner.query(`DELETE FROM events WHERE contact_id IS NULL`);
    await queryRunner.query(`ALTER TABLE "events" ALTER COLUMN "contact_id" SET NOT NULL`);
    await queryRunner.query(`UPDATE emails SET html = '', text = '' WHERE html IS NULL`);
    await queryRunner.query(`ALTER TABLE "emails" ALTER COLUMN "text" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "emails" ALTER COLUMN "html" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "emails" DROP COLUMN "unsubscribed_at"`);
    await queryRunner.query(`ALTER TABLE "emails" DROP COLUMN "content_id"`);
    await queryRunner.query(`DROP TABLE "email_contents"`);
    await queryRunner.query(`DROP TABLE "campaign_counters"`);
    await queryRunner.query(`DROP TABLE "campaigns"`);
    await queryRunner.query(`DROP TYPE "public"."campaign_status"`);
    await queryRunner.query(`DROP TYPE "public"."campaign_audience_type"`);
  }
}

/** The number of counter rows per campaign (CampaignCounter's COUNTER_SLOTS when this migration was written). */
const COUNTER_SLOTS = 8;
