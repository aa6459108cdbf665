import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { EventsService } from '../events/events.service';
import { DnsLookup, DnsResolver } from './dns-resolver';
import {
  DnsRecordError,
  DnsRecordPurpose,
  DnsRecordStatus,
  Domain,
  DomainStatus,
  RecordProblem,
  RecordProblems,
  RecordStatuses,
} from './domain.entity';
import {
  expectedRecords,
  joinTxt,
  judgeDkim,
  judgeDmarc,
  judgeOwnership,
  judgeReturnPath,
  judgeSpf,
  RecordVerdict,
} from './domain-records';
import { DOMAIN_CHECK_SCHEDULE, DomainCheckSchedule } from './domains.constants';
import { DomainsRepository } from './domains.repository';

export type Verdict = RecordVerdict | 'ERROR';

/** A record's verdict and, unless it matched, what was wrong. */
interface RecordCheck {
  verdict: Verdict;
  problem?: RecordProblem;
}

/** Values shown back per record: enough to spot a typo, bounded so a zone full of TXT cannot bloat the row. */
const MAX_FOUND_VALUES = 5;
const MAX_FOUND_VALUE_LENGTH = 1024;

export interface SweepResult {
  checked: number;
  verified: number;
  failed: number;
}

/**
 * Checks a domain's DNS records and moves its status. The one place that
 * decides PENDING / VERIFIED / FAILED, for the check after creation, the
 * verify endpoint and the repeating sweep alike.
 */
@Injectable()
export class DomainVerificationService {
  private readonly logger = new Logger(DomainVerificationService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly domains: DomainsRepository,
    private readonly resolver: DnsResolver,
    @Inject(DOMAIN_CHECK_SCHEDULE) readonly schedule: DomainCheckSchedule,
    private readonly events: EventsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Reloads the domain and checks it; null when it was deleted meanwhile. */
  async checkById(domainId: string, now = new Date()): Promise<Domain | null> {
    const row = await this.domains.reload(this.dataSource.manager, domainId);
    return row ? this.check(row, now) : null;
  }

  /**
   * `now` is when the lookups start; it becomes lastCheckedAt. Background
   * checks (`authoritative` false) only write when no check that started
   * later has written meanwhile; a caller-requested check always writes, as
   * its answer is what the caller sees.
   */
  async check(row: Domain, now = new Date(), authoritative = false): Promise<Domain> {
    const returnPathDomain = this.config.returnPathDomain;
    const records = expectedRecords(row, returnPathDomain);
    const [ownership, dkim, spf, dmarc, returnPath] = records;
    const [[ownershipTxt, dkimTxt, spfTxt, dmarcTxt], returnPathCname] = await Promise.all([
      Promise.all(
        [ownership, dkim, spf, dmarc].map((record) => this.resolver.lookupTxt(record.name)),
      ),
      this.resolver.lookupCname(returnPath.name),
    ]);
    const checks: Record<DnsRecordPurpose, RecordCheck> = {
      [DnsRecordPurpose.OWNERSHIP]: judge(
        ownershipTxt,
        (values) => judgeOwnership(values, row.ownershipToken),
        joinTxt,
      ),
      [DnsRecordPurpose.DKIM]: judge(
        dkimTxt,
        (values) => judgeDkim(values, row.dkimPublicKey),
        joinTxt,
      ),
      [DnsRecordPurpose.SPF]: judge(spfTxt, judgeSpf, joinTxt),
      [DnsRecordPurpose.DMARC]: judge(dmarcTxt, judgeDmarc, joinTxt),
      [DnsRecordPurpose.RETURN_PATH]: judge(
        returnPathCname,
        (targets) => judgeReturnPath(targets, returnPathDomain),
        (target) => target,
      ),
    };
    const verdicts = {} as Record<DnsRecordPurpose, Verdict>;
    const recordProblems: RecordProblems = {};
    for (const [purpose, check] of Object.entries(checks) as [DnsRecordPurpose, RecordCheck][]) {
      verdicts[purpose] = check.verdict;
      if (check.problem) recordProblems[purpose] = check.problem;
    }
    const expired =
      row.status === DomainStatus.PENDING &&
      now.getTime() - row.createdAt.getTime() >= this.schedule.pendingWindowMs;
    const status = nextDomainStatus(
      row.status,
      verdicts[DnsRecordPurpose.OWNERSHIP],
      verdicts[DnsRecordPurpose.DKIM],
      expired,
    );
    const recordStatuses: RecordStatuses = {};
    for (const record of records) {
      recordStatuses[record.purpose] = nextRecordStatus(
        verdicts[record.purpose],
        row.recordStatuses[record.purpose],
        record.required && status !== DomainStatus.PENDING,
      );
    }
    const verifiedAt =
      status === DomainStatus.VERIFIED && row.status !== DomainStatus.VERIFIED
        ? now
        : row.verifiedAt;
    // The creation check, a POST /verify and the sweep may overlap: a background check that
    // finishes after a later-started one must not overwrite that fresher answer with older DNS data.
    // A change to VERIFIED or FAILED records domain.verified / domain.failed (a project event) with it.
    // The status is read again under the row lock: two checks that both started from PENDING must
    // record one domain.verified, not two.
    const { written, event } = await this.dataSource.transaction(async (manager) => {
      const current = await this.domains.lockStatus(manager, row.id);
      if (current === null) return { written: false, event: null };
      const saved = await this.domains.saveCheck(
        manager,
        row.id,
        { status, recordStatuses, recordProblems, lastCheckedAt: now, verifiedAt },
        authoritative ? null : now,
      );
      if (!saved || status === current || status === DomainStatus.PENDING)
        return { written: saved, event: null };
      const recorded = await this.events.record(manager, {
        projectId: row.projectId,
        contactId: null,
        name: status === DomainStatus.VERIFIED ? 'domain.verified' : 'domain.failed',
        data: { domainId: row.id, domain: row.domain, from: current },
      });
      return { written: saved, event: recorded };
    });
    if (event) await this.events.publish([{ ...event, email: null }]);
    if (!written) {
      return (await this.domains.reload(this.dataSource.manager, row.id)) ?? row;
    }
    if (status !== row.status) {
      this.logger.log(
        { domainId: row.id, projectId: row.projectId, from: row.status, to: status },
        'domain status changed',
      );
    }
    const lookupErrors = [ownershipTxt, dkimTxt].filter((l) => l.kind === 'ERROR');
    if (lookupErrors.length > 0) {
      this.logger.warn(
        { domainId: row.id, codes: lookupErrors.map((l) => (l.kind === 'ERROR' ? l.code : '')) },
        'DNS lookup failed',
      );
    }
    return Object.assign(row, {
      status,
      recordStatuses,
      recordProblems,
      lastCheckedAt: now,
      verifiedAt,
    });
  }

  /**
   * The repeating job's work: every PENDING domain (this is what makes the
   * pending interval equal to the sweep interval), and VERIFIED domains not
   * checked for `verifiedEveryMs`. FAILED domains wait for POST /verify.
   * Least recently checked first, so a backlog larger than one batch rotates.
   */
  async sweep(now = new Date()): Promise<SweepResult> {
    const dueBefore = new Date(now.getTime() - this.schedule.verifiedEveryMs);
    const rows = await this.domains.findDueForCheck(
      this.dataSource.manager,
      dueBefore,
      this.schedule.batchSize,
    );
    const result: SweepResult = { checked: 0, verified: 0, failed: 0 };
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < rows.length) {
        const row = rows[next++];
        const before = row.status;
        try {
          const after = await this.check(row);
          result.checked++;
          if (after.status !== before && after.status === DomainStatus.VERIFIED) result.verified++;
          if (after.status !== before && after.status === DomainStatus.FAILED) result.failed++;
        } catch (error) {
          // One broken row must not stop the sweep for the others.
          this.logger.error({ domainId: row.id, err: error }, 'domain check failed');
        }
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(this.schedule.concurrency, rows.length) }, worker),
    );
    return result;
  }
}

/** `valueOf` turns one record into the value judged and shown back: TXT character-strings are joined. */
export function judge<T>(
  lookup: DnsLookup<T>,
  judgeValues: (values: string[]) => RecordVerdict,
  valueOf: (record: T) => string,
): RecordCheck {
  if (lookup.kind === 'ERROR')
    return { verdict: 'ERROR', problem: { error: DnsRecordError.DNS_ERROR } };
  if (lookup.kind === 'ABSENT') {
    return {
      verdict: 'ABSENT',
      problem: { error: lookup.nxdomain ? DnsRecordError.NXDOMAIN : DnsRecordError.NO_RECORD },
    };
  }
  const values = lookup.records.map(valueOf);
  const verdict = judgeValues(values);
  if (verdict === 'MATCH') return { verdict };
  // ABSENT with values: TXT records are there, none of this kind (an SPF check among other TXT).
  const found = values.slice(0, MAX_FOUND_VALUES).map((v) => v.slice(0, MAX_FOUND_VALUE_LENGTH));
  return {
    verdict,
    problem: {
      error: verdict === 'MISMATCH' ? DnsRecordError.MISMATCH : DnsRecordError.NO_RECORD,
      found,
    },
  };
}

/**
 * Both required records found: VERIFIED. A verified domain stays VERIFIED
 * through DNS errors (a timeout says nothing about the records) but becomes
 * FAILED once a required record is definitively gone or wrong. A pending one
 * becomes FAILED when its window is over; a FAILED one recovers only by
 * having both records found.
 */
export function nextDomainStatus(
  current: DomainStatus,
  ownership: Verdict,
  dkim: Verdict,
  pendingExpired: boolean,
): DomainStatus {
  if (ownership === 'MATCH' && dkim === 'MATCH') return DomainStatus.VERIFIED;
  if (current === DomainStatus.VERIFIED) {
    const definitelyBad = [ownership, dkim].some((v) => v === 'ABSENT' || v === 'MISMATCH');
    return definitelyBad ? DomainStatus.FAILED : DomainStatus.VERIFIED;
  }
  if (current === DomainStatus.PENDING)
    return pendingExpired ? DomainStatus.FAILED : DomainStatus.PENDING;
  return DomainStatus.FAILED;
}

/**
 * Per record: found and right is VERIFIED, found and wrong is FAILED. Not
 * published is PENDING, except for a required record of a domain that is no
 * longer pending, which FAILED. A lookup error keeps the last known status.
 */
export function nextRecordStatus(
  verdict: Verdict,
  previous: DnsRecordStatus | undefined,
  absentIsFailure: boolean,
): DnsRecordStatus {
  switch (verdict) {
    case 'MATCH':
      return DnsRecordStatus.VERIFIED;
    case 'MISMATCH':
      return DnsRecordStatus.FAILED;
    case 'ABSENT':
      return absentIsFailure ? DnsRecordStatus.FAILED : DnsRecordStatus.PENDING;
    default:
      return previous ?? DnsRecordStatus.PENDING;
  }
}
