import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { EmailsRepository, WindowOutcomes } from '../sending/emails.repository';
import { ProjectStatsResponse, StatsWindowResponse } from './dto/project-stats';

const DAY_MS = 86_400_000;

/** GET /project/stats: the Overview's rates, this window against the one before. */
@Injectable()
export class ProjectStatsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly emails: EmailsRepository,
  ) {}

  async get(projectId: string, days: number): Promise<ProjectStatsResponse> {
    const to = Date.now();
    const { current, previous } = await this.emails.outcomesByWindow(
      this.dataSource.manager,
      projectId,
      days,
    );
    const mid = to - days * DAY_MS;
    return {
      days,
      current: toWindow(current, mid, to),
      previous: toWindow(previous, mid - days * DAY_MS, mid),
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
