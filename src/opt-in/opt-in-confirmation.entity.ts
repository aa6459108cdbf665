import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Contact } from '../contacts/contact.entity';

/**
 * The last confirmation email sent to a contact (POST /v1/subscribe) and the
 * last confirmation of one: `sentAt` holds the 10-minute rule, and a link
 * whose token was issued before `confirmedAt` has been used. Erased with its
 * contact.
 */
@Entity('opt_in_confirmations')
export class OptInConfirmation {
  @PrimaryColumn({ type: 'uuid', primaryKeyConstraintName: 'opt_in_confirmations_pkey' })
  contactId: string;

  @ManyToOne(() => Contact, { onDelete: 'CASCADE' })
  @JoinColumn({
    name: 'contact_id',
    foreignKeyConstraintName: 'opt_in_confirmations_contact_id_fkey',
  })
  contact?: Contact;

  @Column('uuid')
  projectId: string;

  @Column({ type: 'timestamptz' })
  sentAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  confirmedAt: Date | null;
}
