import { MigrationInterface, QueryRunner } from 'typeorm';

export class Sending1795248735870 implements MigrationInterface {
  name = 'Sending1795248735870';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "email_attachments" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "filename" character varying(255) NOT NULL,
                "content_type" character varying(255) NOT NULL,
                "content" bytea NOT NULL,
                "pending" integer NOT NULL,
                CONSTRAINT "PK_e11a47d59e6c93a48cd3832ab94" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_f282d1f0c96894b166f99bd925" ON "email_attachments" ("project_id")
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."email_source" AS ENUM('TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW')
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."email_status" AS ENUM(
                'QUEUED',
                'SENDING',
                'SENT',
                'FAILED',
                'BOUNCED',
                'SUPPRESSED'
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "emails" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "contact_id" uuid NOT NULL,
                "template_id" uuid,
                "campaign_id" uuid,
                "workflow_execution_id" uuid,
                "source" "public"."email_source" NOT NULL,
                "marketing" boolean NOT NULL DEFAULT false,
                "to_email" character varying(320) NOT NULL,
                "to_name" character varying(200),
                "from_email" character varying(320) NOT NULL,
                "from_name" character varying(200),
                "reply_to" character varying(320),
                "subject" text NOT NULL,
                "html" text NOT NULL,
                "text" text NOT NULL,
                "headers" jsonb NOT NULL DEFAULT '{}',
                "attachments" jsonb NOT NULL DEFAULT '[]',
                "status" "public"."email_status" NOT NULL DEFAULT 'QUEUED',
                "message_id" character varying(998),
                "attempts" integer NOT NULL DEFAULT '0',
                "error" text,
                "priority" smallint NOT NULL,
                "queued_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "sent_at" TIMESTAMP WITH TIME ZONE,
                "opened_at" TIMESTAMP WITH TIME ZONE,
                "clicked_at" TIMESTAMP WITH TIME ZONE,
                "bounced_at" TIMESTAMP WITH TIME ZONE,
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_a54dcebef8d05dca7e839749571" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "emails_project_id_id_idx" ON "emails" ("project_id", "id")
        `);
    await queryRunner.query(`
            CREATE INDEX "emails_contact_id_idx" ON "emails" ("contact_id")
        `);
    await queryRunner.query(`
            CREATE INDEX "emails_campaign_id_status_idx" ON "emails" ("campaign_id", "status")
        `);
    await queryRunner.query(`
            CREATE INDEX "emails_project_id_status_idx" ON "emails" ("project_id", "status")
        `);
    await queryRunner.query(`
            CREATE INDEX "emails_project_id_contact_id_idx" ON "emails" ("project_id", "contact_id")
        `);
    await queryRunner.query(`
            CREATE TABLE "idempotency_keys" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "key" character varying(255) NOT NULL,
                "request_hash" character(64) NOT NULL,
                "response_status" smallint,
                "response_body" jsonb,
                CONSTRAINT "PK_8ad20779ad0411107a56e53d0f6" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys" ("created_at")
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "idempotency_keys_project_id_key_key" ON "idempotency_keys" ("project_id", "key")
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."template_type" AS ENUM('TRANSACTIONAL', 'MARKETING')
        `);
    await queryRunner.query(`
            CREATE TABLE "templates" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "name" character varying(200) NOT NULL,
                "subject" text NOT NULL,
                "body" text NOT NULL,
                "type" "public"."template_type" NOT NULL,
                "from_email" character varying(320),
                "from_name" character varying(200),
                "reply_to" character varying(320),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_515948649ce0bbbe391de702ae5" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_54e5c9fc0c740b2bd65f0160b5" ON "templates" ("project_id")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_1be561cd0bd0f282b8faec4b31" ON "templates" ("project_id", "type")
        `);
    await queryRunner.query(`
            ALTER TABLE "emails"
            ADD CONSTRAINT "FK_18e630371ededf594f21a818635" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "emails" DROP CONSTRAINT "FK_18e630371ededf594f21a818635"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_1be561cd0bd0f282b8faec4b31"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_54e5c9fc0c740b2bd65f0160b5"
        `);
    await queryRunner.query(`
            DROP TABLE "templates"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."template_type"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."idempotency_keys_project_id_key_key"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."idempotency_keys_created_at_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "idempotency_keys"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."emails_project_id_contact_id_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."emails_project_id_status_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."emails_campaign_id_status_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."emails_contact_id_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."emails_project_id_id_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "emails"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."email_status"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."email_source"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_f282d1f0c96894b166f99bd925"
        `);
    await queryRunner.query(`
            DROP TABLE "email_attachments"
        `);
  }
}
