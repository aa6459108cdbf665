import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ReturnPaths } from '../sending/return-paths';
import { UnsubscribeService } from '../sending/unsubscribe.service';
import { InboundResult, InboundStatus } from './inbound-message.entity';
import { InboundMessagesRepository, StoredInbound } from './inbound-messages.repository';
import { InboundMetrics } from './inbound-metrics';

/**
 * Unsubscribe by mail: a message to List-Unsubscribe's `mailto:` address
 * (`u-<token>@<return-path domain>`), whatever its subject and body,
 * unsubscribes the recipient of the email the token names, as the one-click
 * POST does. Apart from the bounce path: only the envelope recipient matters.
 */
@Injectable()
export class InboundUnsubscribes {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly returnPaths: ReturnPaths,
    private readonly unsubscribes: UnsubscribeService,
    private readonly messages: InboundMessagesRepository,
    private readonly metrics: InboundMetrics,
  ) {}

  /** The email an unsubscribe address names (its token verifies), or null. */
  emailOf(address: string): string | null {
    return this.returnPaths.unsubscribeTokens.verifyAddress(address);
  }

  /** The email the first unsubscribe recipient of a stored message names, or null: not one for us. */
  emailOfMessage(message: Pick<StoredInbound, 'rcptTo'>): string | null {
    for (const recipient of message.rcptTo) {
      const emailId = this.emailOf(recipient);
      if (emailId) return emailId;
    }
    return null;
  }

  /** Unsubscribes and finishes the row; a repeated run changes nothing (the unsubscribe is idempotent). */
  async process(message: Pick<StoredInbound, 'id'>, emailId: string): Promise<InboundStatus> {
    const found = await this.unsubscribes.unsubscribeRecipientOf(emailId);
    const status = found ? InboundStatus.PROCESSED : InboundStatus.UNMATCHED;
    const result: InboundResult = {
      format: 'unsubscribe',
      emailId,
      matchedBy: 'envelope',
      reports: found ? { unsubscribe: 1 } : {},
    };
    if (await this.messages.finish(this.dataSource.manager, message.id, status, result))
      this.metrics.count(found ? 'processed' : 'unmatched');
    return status;
  }
}
