import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ItemAnswer, MicroBatcher } from '../common/concurrency/micro-batcher';
import { Semaphore } from '../common/concurrency/semaphore';
import { BouncePolicy } from '../bounces/bounce-policy';
import { retryOnDeadlock } from '../database/retry-on-deadlock';
import { EmailsRepository } from '../sending/emails.repository';
import { ReturnPathTokens } from '../sending/return-path';
import { EmailCandidate, emailCandidates, pickEmail, reportsOf } from './inbound-correlation';
import { InboundResult, InboundStatus } from './inbound-message.entity';
import { InboundMessagesRepository } from './inbound-messages.repository';
import { InboundMetrics } from './inbound-metrics';
import { InboundParser } from './inbound-parser';
import { InboundUnsubscribes } from './inbound-unsubscribes';
import type { ParsedInbound } from './parsed-inbound';

const OUTCOME_OF = {
  [InboundStatus.PROCESSED]: 'processed',
  [InboundStatus.UNMATCHED]: 'unmatched',
  [InboundStatus.IGNORED]: 'ignored',
} as const;

/** Messages whose reports one transaction applies at most. */
const BATCH_SIZE = 128;
/**
 * Batches in flight at once. One: the messages that arrive while a batch runs wait and go
 * together in the next, so a busy worker writes few large batches (the statements of a batch cost
 * Postgres nearly the same for 10 messages as for 100), and two batches never queue on the same
 * rows (sender health locks the project's row after each).
 */
const BATCHES_IN_FLIGHT = 1;
/** A message larger than this is left out of batches and run on its own (a batch holds every raw it loaded). */
const BATCH_MAX_BYTES = 1024 * 1024;
/** Messages run on their own at once (large ones, and those of a batch that failed). */
const SOLO_RUNS = 4;

/** What became of one PROCESS job's message. */
export type ProcessOutcome = InboundStatus | 'already-done' | 'missing';

/** A stored message of a batch, parsed and correlated, before its reports apply. */
interface Prepared {
  id: string;
  parsed: ParsedInbound;
  match: EmailCandidate | null;
  reports: ReturnType<typeof reportsOf>;
}

/**
 * The inbound queue's work on stored messages: parse each, find the email it
 * reports on, hand each report to the bounce policy, record the outcome.
 * The jobs a worker runs at once share one batch (`process`): one load, one
 * parse task on the parse thread (InboundParser), one correlation query, and
 * one transaction that applies every report and finishes every row, so a
 * batch is applied entirely or not at all. Every message of a batch whose
 * parse or transaction failed runs again on its own, so one bad message
 * never holds the others back. Safe to run again at any point (a retry, a worker killed
 * mid-way): a row is finished only from RECEIVED, in the transaction of its
 * reports, and the policy applies a report's dedupe key once.
 */
@Injectable()
export class InboundReports {
  private readonly logger = new Logger(InboundReports.name);
  /** A batch starts after the jobs that arrive in this turn of the event loop, or when a slot frees. */
  private readonly batcher = new MicroBatcher<string, ProcessOutcome>(
    { maxBatch: BATCH_SIZE, maxInFlight: BATCHES_IN_FLIGHT, start: 'tick', keyOf: (id) => id },
    (ids) => this.run(ids, false),
  );
  private readonly soloRuns = new Semaphore(SOLO_RUNS);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly messages: InboundMessagesRepository,
    private readonly emails: EmailsRepository,
    private readonly tokens: ReturnPathTokens,
    private readonly policy: BouncePolicy,
    private readonly metrics: InboundMetrics,
    private readonly unsubscribes: InboundUnsubscribes,
    private readonly parser: InboundParser,
  ) {}

  /** One job's message, applied in a batch with the jobs running beside it. */
  process(id: string): Promise<ProcessOutcome> {
    return this.batcher.submit(id);
  }

  /**
   * One message on its own (a large one, one of a batch that did not parse, one of a
   * failed batch); rejects with what its run threw. It may settle before
   * the batch that started it answers, so it is marked handled here: the
   * batch hands the same promise to the job, which sees the rejection.
   */
  private alone(id: string): Promise<ProcessOutcome> {
    const run = this.soloRuns.run(async () => (await this.run([id], true))[0]);
    run.catch(() => undefined);
    return run;
  }

  /**
   * Loads, parses, correlates and applies these messages; an answer per id.
   * In a batch (`solo` false) a message it cannot run answers with a run of
   * its own; alone, the error is thrown (the job's attempt fails).
   */
  private async run(ids: string[], solo: boolean): Promise<ItemAnswer<ProcessOutcome>[]> {
    const manager = this.dataSource.manager;
    const rows = new Map(
      (
        await this.messages.loadMany(manager, ids, solo ? Number.MAX_SAFE_INTEGER : BATCH_MAX_BYTES)
      ).map((row) => [row.id, row]),
    );
    const answers = new Map<string, ItemAnswer<ProcessOutcome>>();
    const loaded: Array<{ id: string; raw: Buffer; rcptTo: string[] }> = [];
    for (const id of ids) {
      const row = rows.get(id);
      // A message to an unsubscribe address (unsubscribe by mail) is not a report: only its recipient matters.
      const unsubscribeOf = row ? this.unsubscribes.emailOfMessage(row) : null;
      if (!row) answers.set(id, 'missing');
      else if (row.status !== InboundStatus.RECEIVED) answers.set(id, 'already-done');
      else if (unsubscribeOf) answers.set(id, this.unsubscribes.process(row, unsubscribeOf));
      else if (row.raw === null) answers.set(id, this.alone(id));
      else loaded.push({ id, raw: row.raw, rcptTo: row.rcptTo });
    }

    let ok: Array<{ message: (typeof loaded)[number]; parsed: ParsedInbound }> = [];
    try {
      const parsed = await this.parser.parseMany(loaded.map((message) => message.raw));
      ok = loaded.map((message, i) => ({ message, parsed: parsed[i] }));
    } catch (error) {
      if (solo) throw error;
      for (const message of loaded) answers.set(message.id, this.alone(message.id));
    }
    const candidates = ok.map((entry) =>
      emailCandidates(entry.message.rcptTo, entry.parsed, this.tokens),
    );
    const emailIds = [...new Set(candidates.flat().map((candidate) => candidate.emailId))];
    const existing = emailIds.length
      ? await this.emails.messageIdsOf(manager, emailIds)
      : new Map<string, string | null>();
    const prepared: Prepared[] = ok.map((entry, i) => {
      const match = pickEmail(candidates[i], existing);
      return {
        id: entry.message.id,
        parsed: entry.parsed,
        match,
        reports: reportsOf(entry.message.raw, entry.parsed, match?.emailId ?? null),
      };
    });

    if (prepared.length > 0) {
      try {
        for (const [id, status] of await this.apply(prepared)) answers.set(id, status);
      } catch (error) {
        if (solo) throw error;
        this.logger.warn(
          { err: error, messages: prepared.length },
          'an inbound batch failed; its messages run again one by one',
        );
        for (const message of prepared) answers.set(message.id, this.alone(message.id));
      }
    }
    return ids.map((id) => answers.get(id) as ItemAnswer<ProcessOutcome>);
  }

  /** Every report of these messages and their rows' outcomes in one transaction; then the work after commit. */
  private async apply(prepared: Prepared[]): Promise<Map<string, InboundStatus>> {
    const { applied, statuses, finished } = await retryOnDeadlock(() =>
      this.dataSource.transaction(async (manager) => {
        const applied = await this.policy.applyManyWithin(
          manager,
          prepared.flatMap((message) => message.reports),
        );
        const statuses = new Map<string, InboundStatus>();
        const outcomes = [];
        let next = 0;
        for (const message of prepared) {
          const counts: Record<string, number> = {};
          for (const report of message.reports) {
            const key = `${report.kind}:${applied[next++].outcome}`;
            counts[key] = (counts[key] ?? 0) + 1;
          }
          const status =
            message.reports.length === 0
              ? InboundStatus.IGNORED
              : message.match
                ? InboundStatus.PROCESSED
                : InboundStatus.UNMATCHED;
          statuses.set(message.id, status);
          const result: InboundResult = {
            format: message.parsed.format,
            emailId: message.match?.emailId ?? null,
            matchedBy: message.match?.matchedBy ?? null,
            reports: counts,
          };
          outcomes.push({ id: message.id, status, result });
        }
        const finished = await this.messages.finishMany(manager, outcomes);
        return { applied, statuses, finished };
      }),
    );
    await this.policy.afterCommitMany(applied);
    for (const id of finished)
      this.metrics.count(OUTCOME_OF[statuses.get(id) as keyof typeof OUTCOME_OF]);
    return statuses;
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
