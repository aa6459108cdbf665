import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Messages the inbound SMTP/LMTP listener accepted (bounces, complaints), stored
 * before it answers 250, with the outcome of their processing (issue 25).
 */
export class InboundMessages1795720000000 implements MigrationInterface {
  name = 'InboundMessages1795720000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "inbound_messages" (
                "id" uuid NOT NULL,
                "received_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "raw" bytea NOT NULL,
                "mail_from" character varying(998) NOT NULL,
                "rcpt_to" text array NOT NULL,
                "status" character varying(20) NOT NULL DEFAULT 'RECEIVED',
                "processed_at" TIMESTAMP WITH TIME ZONE,
                "result" jsonb,
                CONSTRAINT "PK_4f21d40ad47ab9702cb1ee64590" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "inbound_messages_processed_at_idx" ON "inbound_messages" ("processed_at")
        `);
    await queryRunner.query(`
            CREATE INDEX "inbound_messages_status_received_at_idx" ON "inbound_messages" ("status", "received_at")
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."inbound_messages_status_received_at_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."inbound_messages_processed_at_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "inbound_messages"
        `);
  }
}
