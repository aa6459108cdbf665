import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { TrackingDomainRecord, TrackingDomainStatus } from '../projects/project.entity';
import { TrackingDomainRow } from '../projects/projects.repository';
import { ProjectsService } from '../projects/projects.service';
import { DnsResolver } from './dns-resolver';
import { DnsRecordStatus, DomainStatus } from './domain.entity';
import { judgeCname } from './domain-records';
import {
  judge,
  nextDomainStatus,
  nextRecordStatus,
  SweepResult,
  Verdict,
} from './domain-verification.service';
import { DOMAIN_CHECK_SCHEDULE, DomainCheckSchedule } from './domains.constants';
import { DomainsRepository } from './domains.repository';

/**
 * Checks projects' tracking domains (contract "Tracking domain"): one CNAME
 * to TRACKING_CNAME_TARGET, judged and moved through PENDING / VERIFIED /
 * FAILED by the same rules as a sending domain's required records, on the
 * same schedule (the domain sweep). A name another project has VERIFIED
 * verifies for no one else: the CNAME proves the name points here, not
 * which project may put its links on it. For the same reason the name must
 * be one of the project's VERIFIED sending domains or under one (its DKIM
 * record is the proof of ownership): otherwise a tenant could verify a name
 * another company pointed here before that company's own project did.
 */
@Injectable()
export class TrackingDomainVerifier {
  private readonly logger = new Logger(TrackingDomainVerifier.name);

  constructor(
    private readonly projects: ProjectsService,
    private readonly resolver: DnsResolver,
    @Inject(DOMAIN_CHECK_SCHEDULE) private readonly schedule: DomainCheckSchedule,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly domains: DomainsRepository,
  ) {}

  /** POST /project/tracking-domain/verify: false when the project has no tracking domain. */
  async verifyNow(projectId: string): Promise<boolean> {
    const row = await this.projects.trackingDomainOf(projectId);
    if (!row) return false;
    await this.check(row, new Date(), true);
    return true;
  }

  /**
   * `now` is when the lookup starts. A background check (`authoritative`
   * false) writes only when no later-started check has written meanwhile,
   * and no check writes once the domain was changed or cleared.
   */
  async check(
    row: TrackingDomainRow,
    now = new Date(),
    authoritative = false,
  ): Promise<TrackingDomainStatus> {
    const lookup = await this.resolver.lookupCname(row.domain);
    const judged = judge(
      lookup,
      (targets) => judgeCname(targets, this.config.trackingCnameTarget),
      (target) => target,
    );
    const taken =
      judged.verdict === 'MATCH' &&
      (await this.projects.trackingDomainHeldByOther(row.domain, row.projectId));
    const unowned =
      judged.verdict === 'MATCH' &&
      !taken &&
      (await this.domains.verifiedParentOf(this.dataSource.manager, row.projectId, row.domain)) ===
        null;
    const check: { verdict: Verdict; problem?: { error: string; found?: string[] } } = taken
      ? { verdict: 'MISMATCH', problem: { error: 'TAKEN' } }
      : unowned
        ? { verdict: 'MISMATCH', problem: { error: 'NOT_OWNED' } }
        : judged;
    const expired =
      row.status === TrackingDomainStatus.PENDING &&
      now.getTime() - row.setAt.getTime() >= this.schedule.pendingWindowMs;
    const status = nextDomainStatus(
      DomainStatus[row.status],
      check.verdict,
      check.verdict,
      expired,
    );
    const recordStatus = nextRecordStatus(
      check.verdict,
      row.record ? DnsRecordStatus[row.record.status] : undefined,
      status !== DomainStatus.PENDING,
    );
    const record: TrackingDomainRecord = { status: TrackingDomainStatus[recordStatus] };
    if (recordStatus !== DnsRecordStatus.VERIFIED && check.problem) {
      record.error = check.problem.error;
      if (check.problem.found) record.found = check.problem.found;
    }
    const next = TrackingDomainStatus[status];
    const outcome = await this.projects.saveTrackingCheck(
      row,
      { status: next, record, checkedAt: now },
      authoritative ? null : now,
    );
    if (outcome === 'taken') {
      // Another project's check verified the same name in between: the first one holds it.
      return this.check(row, now, authoritative);
    }
    if (outcome === 'written' && next !== row.status) {
      this.logger.log(
        { projectId: row.projectId, domain: row.domain, from: row.status, to: next },
        'tracking domain status changed',
      );
    }
    return next;
  }

  /** The sweep's share: PENDING tracking domains, and VERIFIED ones due again (as sending domains). */
  async sweep(now = new Date()): Promise<SweepResult> {
    const rows = await this.projects.trackingDomainsDue(
      new Date(now.getTime() - this.schedule.verifiedEveryMs),
      this.schedule.batchSize,
    );
    const result: SweepResult = { checked: 0, verified: 0, failed: 0 };
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < rows.length) {
        const row = rows[next++];
        try {
          const status = await this.check(row);
          result.checked++;
          if (status !== row.status && status === TrackingDomainStatus.VERIFIED) result.verified++;
          if (status !== row.status && status === TrackingDomainStatus.FAILED) result.failed++;
        } catch (error) {
          // One broken row must not stop the sweep for the others.
          this.logger.error(
            { projectId: row.projectId, err: error },
            'tracking domain check failed',
          );
        }
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(this.schedule.concurrency, rows.length) }, worker),
    );
    return result;
  }
}
