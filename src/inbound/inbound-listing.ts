import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { InboundStatus } from './inbound-message.entity';
import { InboundMessagesRepository, InboundSummary } from './inbound-messages.repository';

/** The stored inbound messages as `node dist/cli.js inbound list` shows them (unmatched reports among them). */
@Injectable()
export class InboundListing {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly messages: InboundMessagesRepository,
  ) {}

  list(status: InboundStatus | null, limit: number): Promise<InboundSummary[]> {
    return this.messages.list(this.dataSource.manager, status, limit);
  }
}
