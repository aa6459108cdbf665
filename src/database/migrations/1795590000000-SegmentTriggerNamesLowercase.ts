import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A SEGMENT_ENTRY/EXIT workflow created or patched with its segment id in
 * capitals stored the id lowercased but the trigger name (`segment.<id>.entered`,
 * which the events trigger joins on) as sent: no membership event ever matched
 * it, so the workflow never started. The name is now built from the lowercased
 * id; this repairs the names stored before.
 */
export class SegmentTriggerNamesLowercase1795590000000 implements MigrationInterface {
  name = 'SegmentTriggerNamesLowercase1795590000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE "workflows" SET "trigger_name" = lower("trigger_name")
        WHERE "trigger_segment_id" IS NOT NULL AND "trigger_name" <> lower("trigger_name")`,
    );
  }

  public async down(): Promise<void> {
    // Nothing to undo: the lowercase names are the correct ones under either version.
  }
}
