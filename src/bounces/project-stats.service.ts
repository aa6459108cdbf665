import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { EmailsRepository, WindowOutcomes } from '../sending/emails.repository';
import { ProjectStatsResponse, StatsWindowResponse } from './dto/project-stats';

const DAY_MS = 86_400_000;

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * GET /project/stats: the Overview's rates, this window against the one before. A window is
 * whole UTC days, today included (the per-day counters' grain): the last 30 days are today and
 * the 29 before, from midnight UTC to the coming midnight.
 */
@Injectable()
export class ProjectStatsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly emails: EmailsRepository,
  ) {}

  async get(projectId: string, days: number): Promise<ProjectStatsResponse> {
    const now = new Date();
    const to = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    const mid = to - days * DAY_MS;
    const from = mid - days * DAY_MS;
    const { current, previous } = await this.emails.outcomesByDays(
      this.dataSource.manager,
      projectId,
      { from: isoDay(from), mid: isoDay(mid), to: isoDay(to - DAY_MS) },
    );
    return {
      days,
      current: toWindow(current, mid, to),
      previous: toWindow(previous, from, mid),
    };
  }
}

function toWindow(counts: WindowOutcomes, from: number, to: number): StatsWindowResponse {
  const rate = (n: number) => (counts.sent === 0 ? null : n / counts.sent);
  return {
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    ...counts,
    openRate: rate(counts.opened),
    clickRate: rate(counts.clicked),
    bounceRate: rate(counts.bounced),
    complaintRate: rate(counts.complained),
  };
}
