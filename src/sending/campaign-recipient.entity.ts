import { Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Contact } from '../contacts/contact.entity';

/**
 * One row per contact a campaign made an email for: the unique rule "one
 * email per campaign recipient", which cannot be a unique index of the
 * partitioned `emails`. A statement trigger on emails writes it, so a
 * second email for a recipient is a unique violation; the fan-out leaves out
 * recipients found here (EmailsRepository.insertBulk). It outlives the
 * email when retention drops the email's month, so a resumed fan-out still
 * sends nothing twice; it goes with the contact.
 */
@Entity('campaign_recipients')
@Index('campaign_recipients_contact_id_idx', ['contactId'])
export class CampaignRecipient {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_campaign_recipients' })
  campaignId: string;

  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'PK_campaign_recipients' })
  contactId: string;

  @ManyToOne(() => Contact, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'contact_id', foreignKeyConstraintName: 'FK_campaign_recipients_contact' })
  contact?: Contact;
}
