import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { BouncePolicy } from '../bounces/bounce-policy';
import { EmailsRepository } from '../sending/emails.repository';
import { ReturnPathTokens } from '../sending/return-path';
import { emailCandidates, pickEmail, reportsOf } from './inbound-correlation';
import { InboundResult, InboundStatus } from './inbound-message.entity';
import { InboundMessagesRepository } from './inbound-messages.repository';
import { InboundMetrics } from './inbound-metrics';
import { InboundUnsubscribes } from './inbound-unsubscribes';
import { parseInbound } from './parsers';

const OUTCOME_OF = {
  [InboundStatus.PROCESSED]: 'processed',
  [InboundStatus.UNMATCHED]: 'unmatched',
  [InboundStatus.IGNORED]: 'ignored',
} as const;

/** What became of one PROCESS job's message. */
export type ProcessOutcome = InboundStatus | 'already-done' | 'missing';

/**
 * The inbound queue's work on one stored message: parse it, find the email
 * it reports on, hand each report to the bounce policy, record the outcome.
 * Safe to run again at any point (a retry, a worker killed mid-way): the
 * row is finished only from RECEIVED, and the policy applies a report's
 * dedupe key once.
 */
@Injectable()
export class InboundReports {
  private readonly logger = new Logger(InboundReports.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly messages: InboundMessagesRepository,
    private readonly emails: EmailsRepository,
    private readonly tokens: ReturnPathTokens,
    private readonly policy: BouncePolicy,
    private readonly metrics: InboundMetrics,
    private readonly unsubscribes: InboundUnsubscribes,
  ) {}

  async process(id: string): Promise<ProcessOutcome> {
    const manager = this.dataSource.manager;
    const message = await this.messages.load(manager, id);
    if (!message) return 'missing';
    if (message.status !== InboundStatus.RECEIVED) return 'already-done';
    const unsubscribeOf = this.unsubscribes.emailOfMessage(message);
    if (unsubscribeOf) return this.unsubscribes.process(message, unsubscribeOf);

    const parsed = await parseInbound(message.raw);
    const candidates = emailCandidates(message.rcptTo, parsed, this.tokens);
    const existing = candidates.length
      ? await this.emails.messageIdsOf(manager, [...new Set(candidates.map((c) => c.emailId))])
      : new Map<string, string | null>();
    const match = pickEmail(candidates, existing);
    const reports = reportsOf(message.raw, parsed, match?.emailId ?? null);

    const counts: Record<string, number> = {};
    for (const report of reports) {
      const outcome = await this.policy.apply(report);
      const key = `${report.kind}:${outcome}`;
      counts[key] = (counts[key] ?? 0) + 1;
    }
    const status =
      reports.length === 0
        ? InboundStatus.IGNORED
        : match
          ? InboundStatus.PROCESSED
          : InboundStatus.UNMATCHED;
    const result: InboundResult = {
      format: parsed.format,
      emailId: match?.emailId ?? null,
      matchedBy: match?.matchedBy ?? null,
      reports: counts,
    };
    if (await this.messages.finish(manager, id, status, result)) {
      this.metrics.count(OUTCOME_OF[status]);
    }
    return status;
  }

  /** The job's last attempt failed: the message is kept, FAILED, with the error (`inbound list`). */
  async markFailed(id: string, error: string): Promise<void> {
    const result: InboundResult = {
      format: 'unknown',
      emailId: null,
      matchedBy: null,
      reports: {},
      error,
    };
    if (await this.messages.finish(this.dataSource.manager, id, InboundStatus.FAILED, result)) {
      this.metrics.count('failed');
      this.logger.warn({ inboundMessageId: id, error }, 'inbound message failed every attempt');
    }
  }
}
