import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Bounces and complaints (issue 25): the COMPLAINED email status and the
 * email's `bounce` and `complained_at`, every report received
 * (`bounce_reports`, unique on its dedupe key), why and when a contact was
 * suppressed, the project's sender health, the PAUSED campaign status, and
 * the campaign counters' `complained` and `accepted` (messages a server
 * accepted, late bounces and complaints included: the stats' `sent`).
 * New enum values cannot be used in the transaction that adds them, so the
 * functions below compare them as text.
 */
export class BouncePolicy1795700000000 implements MigrationInterface {
  name = 'BouncePolicy1795700000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TYPE "public"."email_status" ADD VALUE IF NOT EXISTS 'COMPLAINED'`,
    );
    await queryRunner.query(
      `ALTER TYPE "public"."campaign_status" ADD VALUE IF NOT EXISTS 'PAUSED'`,
    );
    await queryRunner.query(`ALTER TABLE "emails" ADD "complained_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "emails" ADD "bounce" jsonb`);
    // Sender health counts a project's messages by when they were accepted (or refused with a 5xx).
    await queryRunner.query(`
      CREATE INDEX "emails_project_id_outcome_at_idx" ON "emails" ("project_id", (COALESCE("sent_at", "bounced_at")))
       WHERE "sent_at" IS NOT NULL OR "bounced_at" IS NOT NULL`);

    await queryRunner.query(
      `CREATE TYPE "public"."suppression_reason" AS ENUM('bounce', 'complaint', 'manual')`,
    );
    await queryRunner.query(
      `ALTER TABLE "contacts" ADD "suppressed_reason" "public"."suppression_reason"`,
    );
    await queryRunner.query(`ALTER TABLE "contacts" ADD "suppressed_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(
      `UPDATE contacts SET suppressed_reason = 'bounce', suppressed_at = updated_at WHERE suppressed`,
    );
    await queryRunner.query(
      `CREATE INDEX "contacts_suppressed_idx" ON "contacts" ("project_id", "id") WHERE suppressed`,
    );

    await queryRunner.query(
      `CREATE TYPE "public"."project_sending_status" AS ENUM('HEALTHY', 'WARNING', 'PAUSED')`,
    );
    await queryRunner.query(
      `ALTER TABLE "projects" ADD "sending_status" "public"."project_sending_status" NOT NULL DEFAULT 'HEALTHY'`,
    );
    await queryRunner.query(`ALTER TABLE "projects" ADD "sending_reason" character varying(200)`);
    await queryRunner.query(
      `ALTER TABLE "projects" ADD "sending_paused_at" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(
      `ALTER TABLE "projects" ADD "sending_window_from" TIMESTAMP WITH TIME ZONE`,
    );

    await queryRunner.query(`
      CREATE TABLE "bounce_reports" (
        "id" uuid NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "project_id" uuid,
        "email_id" uuid,
        "kind" character varying(16) NOT NULL,
        "source" character varying(16) NOT NULL,
        "recipient" character varying(320),
        "status" character varying(32),
        "diagnostic" text,
        "feedback_type" character varying(64),
        "dedupe_key" character varying(500) NOT NULL,
        "outcome" character varying(16) NOT NULL,
        CONSTRAINT "PK_bounce_reports" PRIMARY KEY ("id"))`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "bounce_reports_dedupe_key_key" ON "bounce_reports" ("dedupe_key")`,
    );
    await queryRunner.query(
      `CREATE INDEX "bounce_reports_project_id_id_idx" ON "bounce_reports" ("project_id", "id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "bounce_reports_email_id_idx" ON "bounce_reports" ("email_id")`,
    );
    await queryRunner.query(`
      ALTER TABLE "bounce_reports" ADD CONSTRAINT "FK_bounce_reports_project" FOREIGN KEY ("project_id")
      REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`
      ALTER TABLE "bounce_reports" ADD CONSTRAINT "FK_bounce_reports_email" FOREIGN KEY ("email_id")
      REFERENCES "emails"("id") ON DELETE SET NULL ON UPDATE NO ACTION`);

    await queryRunner.query(
      `ALTER TABLE "campaign_counters" ADD "complained" integer NOT NULL DEFAULT '0'`,
    );
    await queryRunner.query(
      `ALTER TABLE "campaign_counters" ADD "accepted" integer NOT NULL DEFAULT '0'`,
    );
    await queryRunner.query(`
      UPDATE campaign_counters k SET accepted = n.accepted
        FROM (SELECT campaign_id, count(*)::int AS accepted FROM emails
               WHERE campaign_id IS NOT NULL AND sent_at IS NOT NULL GROUP BY campaign_id) n
       WHERE k.campaign_id = n.campaign_id AND k.slot = 0`);
    await queryRunner.query(countersOnInsert(true));
    await queryRunner.query(countersOnChange(true));

    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION webhook_deliverable(name text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
        SELECT starts_with(name, 'email.') OR starts_with(name, 'contact.') OR starts_with(name, 'project.')
            OR name IN ('campaign.started', 'campaign.sent', 'campaign.cancelled', 'domain.verified',
                        'domain.failed', 'workflow.execution.failed', 'webhook.disabled')
      $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION webhook_deliverable(name text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
        SELECT starts_with(name, 'email.') OR starts_with(name, 'contact.')
            OR name IN ('campaign.started', 'campaign.sent', 'campaign.cancelled', 'domain.verified',
                        'domain.failed', 'workflow.execution.failed', 'webhook.disabled')
      $$`);
    await queryRunner.query(countersOnInsert(false));
    await queryRunner.query(countersOnChange(false));
    await queryRunner.query(`ALTER TABLE "campaign_counters" DROP COLUMN "accepted"`);
    await queryRunner.query(`ALTER TABLE "campaign_counters" DROP COLUMN "complained"`);
    await queryRunner.query(`DROP TABLE "bounce_reports"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "sending_window_from"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "sending_paused_at"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "sending_reason"`);
    await queryRunner.query(`ALTER TABLE "projects" DROP COLUMN "sending_status"`);
    await queryRunner.query(`DROP TYPE "public"."project_sending_status"`);
    await queryRunner.query(`DROP INDEX "public"."contacts_suppressed_idx"`);
    await queryRunner.query(`ALTER TABLE "contacts" DROP COLUMN "suppressed_at"`);
    await queryRunner.query(`ALTER TABLE "contacts" DROP COLUMN "suppressed_reason"`);
    await queryRunner.query(`DROP TYPE "public"."suppression_reason"`);
    await queryRunner.query(`DROP INDEX "public"."emails_project_id_outcome_at_idx"`);
    await queryRunner.query(`ALTER TABLE "emails" DROP COLUMN "bounce"`);
    await queryRunner.query(`ALTER TABLE "emails" DROP COLUMN "complained_at"`);
    // The enum values stay (Postgres cannot drop one); such rows go back to the nearest old status.
    await queryRunner.query(
      `UPDATE emails SET status = 'BOUNCED' WHERE status::text = 'COMPLAINED'`,
    );
    await queryRunner.query(
      `UPDATE campaigns SET status = 'SENDING' WHERE status::text = 'PAUSED'`,
    );
  }
}

/** campaign_counters_on_insert, with (true) or without (false) the complained and accepted columns. */
function countersOnInsert(withNew: boolean): string {
  return `
      CREATE OR REPLACE FUNCTION campaign_counters_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE campaign_counters k
           SET queued = k.queued + n.queued, sending = k.sending + n.sending, sent = k.sent + n.sent,
               failed = k.failed + n.failed, bounced = k.bounced + n.bounced, suppressed = k.suppressed + n.suppressed,
               cancelled = k.cancelled + n.cancelled, opened = k.opened + n.opened, clicked = k.clicked + n.clicked,
               unsubscribed = k.unsubscribed + n.unsubscribed
               ${withNew ? ', complained = k.complained + n.complained, accepted = k.accepted + n.accepted' : ''}
          FROM (SELECT campaign_id,
                       count(*) FILTER (WHERE status = 'QUEUED') AS queued,
                       count(*) FILTER (WHERE status = 'SENDING') AS sending,
                       count(*) FILTER (WHERE status = 'SENT') AS sent,
                       count(*) FILTER (WHERE status = 'FAILED') AS failed,
                       count(*) FILTER (WHERE status = 'BOUNCED') AS bounced,
                       count(*) FILTER (WHERE status = 'SUPPRESSED') AS suppressed,
                       count(*) FILTER (WHERE status::text = 'CANCELLED') AS cancelled,
                       count(*) FILTER (WHERE status::text = 'COMPLAINED') AS complained,
                       count(*) FILTER (WHERE sent_at IS NOT NULL) AS accepted,
                       count(*) FILTER (WHERE opened_at IS NOT NULL) AS opened,
                       count(*) FILTER (WHERE clicked_at IS NOT NULL) AS clicked,
                       count(*) FILTER (WHERE unsubscribed_at IS NOT NULL) AS unsubscribed
                  FROM inserted WHERE campaign_id IS NOT NULL GROUP BY campaign_id) n
         WHERE k.campaign_id = n.campaign_id AND k.slot = 0;
        RETURN NULL;
      END $$`;
}

/** campaign_counters_on_change, with (true) or without (false) the complained and accepted columns. */
function countersOnChange(withNew: boolean): string {
  return `
      CREATE OR REPLACE FUNCTION campaign_counters_on_change() RETURNS trigger LANGUAGE plpgsql AS $$
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
          ${
            withNew
              ? `complained = complained + (n.status::text IS NOT DISTINCT FROM 'COMPLAINED')::int - (o.status::text = 'COMPLAINED')::int,
          accepted = accepted + (n.sent_at IS NOT NULL)::int - (o.sent_at IS NOT NULL)::int,`
              : ''
          }
          opened = opened + (n.opened_at IS NOT NULL)::int - (o.opened_at IS NOT NULL)::int,
          clicked = clicked + (n.clicked_at IS NOT NULL)::int - (o.clicked_at IS NOT NULL)::int,
          unsubscribed = unsubscribed + (n.unsubscribed_at IS NOT NULL)::int - (o.unsubscribed_at IS NOT NULL)::int
        WHERE campaign_id = o.campaign_id AND slot = get_byte(uuid_send(o.id), 15) % ${COUNTER_SLOTS};
        RETURN NULL;
      END $$`;
}

/** The number of counter rows per campaign (CampaignCounter's COUNTER_SLOTS when this migration was written). */
const COUNTER_SLOTS = 8;
