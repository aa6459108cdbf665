import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Campaign counters, bulk changes: the per-row UPDATE trigger of the
 * Campaigns migration rewrote the same few counter rows once per email, so
 * one statement changing 50,000 emails of a campaign (a cancel mid-send)
 * left 50,000 versions of each row to walk in its own transaction: 36 s,
 * growing with the square of the count. A statement that counts for itself
 * sets `mw.counters_by_statement` to `on` for its duration (set_config, local
 * to the transaction) and adjusts the counters once (EmailsRepository.
 * cancelQueuedOfCampaign); the row trigger stands aside while it is on.
 */
export class CampaignCounterBulk1795560000000 implements MigrationInterface {
  name = 'CampaignCounterBulk1795560000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER emails_campaign_counters_update ON emails`);
    await queryRunner.query(`
      CREATE TRIGGER emails_campaign_counters_update AFTER UPDATE ON emails FOR EACH ROW
        WHEN (OLD.campaign_id IS NOT NULL AND (OLD.status IS DISTINCT FROM NEW.status
              OR (OLD.opened_at IS NULL) <> (NEW.opened_at IS NULL)
              OR (OLD.clicked_at IS NULL) <> (NEW.clicked_at IS NULL)
              OR (OLD.unsubscribed_at IS NULL) <> (NEW.unsubscribed_at IS NULL))
              AND current_setting('mw.counters_by_statement', true) IS DISTINCT FROM 'on')
        EXECUTE FUNCTION campaign_counters_on_change()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER emails_campaign_counters_update ON emails`);
    await queryRunner.query(`
      CREATE TRIGGER emails_campaign_counters_update AFTER UPDATE ON emails FOR EACH ROW
        WHEN (OLD.campaign_id IS NOT NULL AND (OLD.status IS DISTINCT FROM NEW.status
              OR (OLD.opened_at IS NULL) <> (NEW.opened_at IS NULL)
              OR (OLD.clicked_at IS NULL) <> (NEW.clicked_at IS NULL)
              OR (OLD.unsubscribed_at IS NULL) <> (NEW.unsubscribed_at IS NULL)))
        EXECUTE FUNCTION campaign_counters_on_change()`);
  }
}
