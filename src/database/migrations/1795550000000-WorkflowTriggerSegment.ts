import { MigrationInterface, QueryRunner } from 'typeorm';

export class WorkflowTriggerSegment1795550000000 implements MigrationInterface {
  name = 'WorkflowTriggerSegment1795550000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "workflows"
            ADD CONSTRAINT "FK_fd7184da5f1f816ac07afead044" FOREIGN KEY ("trigger_segment_id") REFERENCES "segments"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "workflows" DROP CONSTRAINT "FK_fd7184da5f1f816ac07afead044"
        `);
  }
}
