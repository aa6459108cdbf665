import { MigrationInterface, QueryRunner } from 'typeorm';

export class Workflows1795530000000 implements MigrationInterface {
  name = 'Workflows1795530000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TYPE "public"."workflow_trigger_type" AS ENUM(
                'EVENT',
                'SEGMENT_ENTRY',
                'SEGMENT_EXIT',
                'MANUAL'
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "workflows" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "name" character varying(200) NOT NULL,
                "description" text,
                "enabled" boolean NOT NULL DEFAULT false,
                "trigger_type" "public"."workflow_trigger_type" NOT NULL,
                "trigger_event" character varying(100),
                "trigger_segment_id" uuid,
                "trigger_name" character varying(120),
                "allow_reentry" boolean NOT NULL DEFAULT false,
                "steps" jsonb NOT NULL,
                "deleted_at" TIMESTAMP WITH TIME ZONE,
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_5b5757cc1cd86268019fef52e0c" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "workflows_trigger_idx" ON "workflows" ("project_id", "trigger_name")
            WHERE enabled
                AND deleted_at IS NULL
        `);
    await queryRunner.query(`
            CREATE INDEX "workflows_project_id_id_idx" ON "workflows" ("project_id", "id")
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."workflow_execution_status" AS ENUM(
                'RUNNING',
                'WAITING',
                'COMPLETED',
                'EXITED',
                'FAILED',
                'CANCELLED'
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "workflow_executions" (
                "id" uuid NOT NULL,
                "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "project_id" uuid NOT NULL,
                "workflow_id" uuid NOT NULL,
                "contact_id" uuid NOT NULL,
                "status" "public"."workflow_execution_status" NOT NULL DEFAULT 'RUNNING',
                "current_step_id" character varying(64),
                "version" integer NOT NULL DEFAULT '0',
                "due_at" TIMESTAMP WITH TIME ZONE,
                "wait_event" character varying(100),
                "trigger_event_id" uuid,
                "resume_event_id" uuid,
                "data" jsonb NOT NULL DEFAULT '{}',
                "step_attempts" integer NOT NULL DEFAULT '0',
                "once_key" uuid,
                "started_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "finished_at" TIMESTAMP WITH TIME ZONE,
                "exit_reason" character varying(100),
                "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_9d49b5c86c267d902145ed42c9d" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "workflow_executions_resume_event_idx" ON "workflow_executions" ("resume_event_id")
            WHERE resume_event_id IS NOT NULL
        `);
    await queryRunner.query(`
            CREATE INDEX "workflow_executions_trigger_event_idx" ON "workflow_executions" ("trigger_event_id")
            WHERE trigger_event_id IS NOT NULL
        `);
    await queryRunner.query(`
            CREATE INDEX "workflow_executions_waiting_idx" ON "workflow_executions" ("contact_id", "wait_event")
            WHERE status = 'WAITING'
                AND wait_event IS NOT NULL
        `);
    await queryRunner.query(`
            CREATE INDEX "workflow_executions_due_idx" ON "workflow_executions" ("due_at")
            WHERE status IN ('RUNNING', 'WAITING')
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "workflow_executions_open_idx" ON "workflow_executions" ("workflow_id", "contact_id")
            WHERE status IN ('RUNNING', 'WAITING')
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "workflow_executions_once_idx" ON "workflow_executions" ("workflow_id", "once_key")
        `);
    await queryRunner.query(`
            CREATE INDEX "workflow_executions_workflow_id_id_idx" ON "workflow_executions" ("workflow_id", "id")
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."workflow_step_run_status" AS ENUM('COMPLETED', 'FAILED', 'SKIPPED', 'WAITING')
        `);
    await queryRunner.query(`
            CREATE TABLE "workflow_execution_steps" (
                "execution_id" uuid NOT NULL,
                "step_id" character varying(64) NOT NULL,
                "seq" integer NOT NULL,
                "type" character varying(20) NOT NULL,
                "status" "public"."workflow_step_run_status" NOT NULL,
                "started_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "finished_at" TIMESTAMP WITH TIME ZONE,
                "output" jsonb,
                "error" text,
                CONSTRAINT "PK_fb8dc973e3284087ba84a2b7ae2" PRIMARY KEY ("execution_id", "step_id")
            )
        `);
    await queryRunner.query(`
            ALTER TABLE "emails"
            ADD "workflow_step_id" character varying(64)
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "emails_workflow_step_idx" ON "emails" ("workflow_execution_id", "workflow_step_id")
            WHERE workflow_execution_id IS NOT NULL
        `);
    await queryRunner.query(`
            ALTER TABLE "workflows"
            ADD CONSTRAINT "FK_376276dcfa299f6483d37c83ccb" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "workflow_executions"
            ADD CONSTRAINT "FK_6347f114eeaac28722f959f6e3f" FOREIGN KEY ("workflow_id") REFERENCES "workflows"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "workflow_executions"
            ADD CONSTRAINT "FK_20a934d2c3399b25915d149b438" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "workflow_execution_steps"
            ADD CONSTRAINT "FK_b83a223123b7bd2949a16058197" FOREIGN KEY ("execution_id") REFERENCES "workflow_executions"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            CREATE INDEX "workflow_executions_contact_id_idx" ON "workflow_executions" ("contact_id")
        `);
    // Hand-written: the triggers. Every INSERT into events (a track batch, a send, a delivery status
    // change, a segment entry) starts the executions of the enabled workflows whose trigger names the
    // event, and ends the waits of executions waiting for it, in the events' own transaction: a trigger
    // is as durable as its event. Re-entry is the unique indexes' job (ON CONFLICT DO NOTHING).
    // The jobs are added after commit (WorkflowDispatcher), or by the recovery when that never happened.
    await queryRunner.query(`
            CREATE FUNCTION workflow_triggers() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              INSERT INTO workflow_executions (id, project_id, workflow_id, contact_id, status, version, due_at,
                                               trigger_event_id, data, once_key)
              SELECT mw_uuid_v7(), e.project_id, w.id, e.contact_id, 'RUNNING', 0, now(), e.id, e.data,
                     CASE WHEN w.allow_reentry THEN NULL ELSE e.contact_id END
                FROM inserted e
                JOIN workflows w ON w.project_id = e.project_id AND w.trigger_name = e.name
                                AND w.enabled AND w.deleted_at IS NULL
               WHERE e.contact_id IS NOT NULL
               ORDER BY e.id, w.id
              ON CONFLICT DO NOTHING;
              UPDATE workflow_executions x
                 SET status = 'RUNNING', wait_event = NULL, resume_event_id = r.event_id, due_at = now(),
                     version = x.version + 1, updated_at = now()
                FROM (SELECT DISTINCT ON (w.id) w.id, e.id AS event_id
                        FROM inserted e
                        JOIN workflow_executions w ON w.contact_id = e.contact_id AND w.status = 'WAITING'
                                                  AND w.wait_event = e.name
                       WHERE e.contact_id IS NOT NULL
                       ORDER BY w.id, e.id) r
               WHERE x.id = r.id AND x.status = 'WAITING';
              RETURN NULL;
            END $$
        `);
    await queryRunner.query(`
            CREATE TRIGGER events_workflow_triggers AFTER INSERT ON events
              REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION workflow_triggers()
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER events_workflow_triggers ON events`);
    await queryRunner.query(`DROP FUNCTION workflow_triggers()`);
    await queryRunner.query(`DROP INDEX "public"."workflow_executions_contact_id_idx"`);
    await queryRunner.query(`
            ALTER TABLE "workflow_execution_steps" DROP CONSTRAINT "FK_b83a223123b7bd2949a16058197"
        `);
    await queryRunner.query(`
            ALTER TABLE "workflow_executions" DROP CONSTRAINT "FK_20a934d2c3399b25915d149b438"
        `);
    await queryRunner.query(`
            ALTER TABLE "workflow_executions" DROP CONSTRAINT "FK_6347f114eeaac28722f959f6e3f"
        `);
    await queryRunner.query(`
            ALTER TABLE "workflows" DROP CONSTRAINT "FK_376276dcfa299f6483d37c83ccb"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."emails_workflow_step_idx"
        `);
    await queryRunner.query(`
            ALTER TABLE "emails" DROP COLUMN "workflow_step_id"
        `);
    await queryRunner.query(`
            DROP TABLE "workflow_execution_steps"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."workflow_step_run_status"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflow_executions_workflow_id_id_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflow_executions_once_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflow_executions_open_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflow_executions_due_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflow_executions_waiting_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflow_executions_trigger_event_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflow_executions_resume_event_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "workflow_executions"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."workflow_execution_status"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflows_project_id_id_idx"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."workflows_trigger_idx"
        `);
    await queryRunner.query(`
            DROP TABLE "workflows"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."workflow_trigger_type"
        `);
  }
}
