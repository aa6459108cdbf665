import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CampaignStatusService } from '../campaigns/campaign-status.service';
import { ApiException } from '../common/errors/api-exception';
import { SYSTEM_EVENTS } from '../events/event-names';
import type { EventRow } from '../events/event.row';
import { EventsService } from '../events/events.service';
import { Project, SendingStatus } from '../projects/project.entity';
import { ProjectsService } from '../projects/projects.service';
import { EmailsRepository } from '../sending/emails.repository';
import { AppliedReport, BouncePolicy } from './bounce-policy';
import { ProjectHealthResponse } from './dto/project-health.response';
import { SenderHealthStatus } from './sender-health-status';
import { HEALTH_WINDOW_DAYS, HealthCounts, judge, rates } from './sender-health-rules';

/**
 * Sender health (contract "Sender health"): after every transaction in
 * which the policy applied hard bounces or complaints (one report, or an
 * inbound batch), each project concerned has its rates over the window
 * judged once, under the project row's lock, from exact counts. Entering WARNING records
 * `project.health_warning`; entering PAUSED records `project.sending_paused`
 * and pauses the project's SENDING campaigns in the same transaction.
 * PAUSED stays until an operator resumes; WARNING goes back to HEALTHY when
 * the rates fall (judged again at each report and each GET).
 */
@Injectable()
export class SenderHealth implements OnModuleInit {
  private readonly logger = new Logger(SenderHealth.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly projects: ProjectsService,
    private readonly emails: EmailsRepository,
    private readonly campaigns: CampaignStatusService,
    private readonly events: EventsService,
    private readonly status: SenderHealthStatus,
    private readonly policy: BouncePolicy,
  ) {}

  onModuleInit(): void {
    this.policy.onApplied((applied) => this.afterReports(applied));
  }

  async get(projectId: string): Promise<ProjectHealthResponse> {
    const judged = await this.judgeWindow(projectId);
    // The counts just judged are the answer's: the window is not read a second time.
    return this.read(projectId, judged?.counts);
  }

  async resume(projectId: string): Promise<ProjectHealthResponse> {
    await this.status.resume(projectId);
    return this.read(projectId);
  }

  /** Judges the project's window now; answers the status it is left in. */
  async evaluate(projectId: string): Promise<SendingStatus | null> {
    return (await this.judgeWindow(projectId))?.status ?? null;
  }

  /** evaluate, also answering the window's counts it judged (none while PAUSED: nothing is judged). */
  private async judgeWindow(
    projectId: string,
  ): Promise<{ status: SendingStatus; counts: HealthCounts | undefined } | null> {
    const outcome = await this.dataSource.transaction(async (manager) => {
      const project = await this.projects.lockForHealth(manager, projectId);
      if (!project) return null;
      if (project.sendingStatus === SendingStatus.PAUSED)
        return { status: project.sendingStatus, event: null, counts: undefined };
      const counts = await this.emails.outcomesSince(
        manager,
        projectId,
        HEALTH_WINDOW_DAYS,
        project.sendingWindowFrom,
      );
      const verdict = judge(counts);
      if (verdict.status === project.sendingStatus)
        return { status: project.sendingStatus, event: null, counts };
      const paused = verdict.status === SendingStatus.PAUSED;
      await this.projects.setSendingHealth(manager, projectId, {
        sendingStatus: verdict.status,
        sendingReason: verdict.reason,
        sendingPausedAt: paused ? new Date() : null,
      });
      const data = {
        ...counts,
        bounceRate: verdict.bounceRate,
        complaintRate: verdict.complaintRate,
        reason: verdict.reason,
      };
      let event: EventRow | null = null;
      if (paused) {
        const pausedCampaigns = await this.campaigns.pauseSendingOfProject(manager, projectId);
        event = await this.status.record(manager, projectId, SYSTEM_EVENTS.PROJECT_SENDING_PAUSED, {
          ...data,
          pausedCampaigns,
        });
      } else if (verdict.status === SendingStatus.WARNING) {
        event = await this.status.record(
          manager,
          projectId,
          SYSTEM_EVENTS.PROJECT_HEALTH_WARNING,
          data,
        );
      }
      return { status: verdict.status, event, counts };
    });
    if (outcome?.event) await this.events.publish([{ ...outcome.event, email: null }]);
    if (outcome?.status === SendingStatus.PAUSED && outcome.event)
      this.logger.warn({ projectId, reason: outcome.event.data.reason }, 'sending paused');
    return outcome && { status: outcome.status, counts: outcome.counts };
  }

  private async afterReports(applied: AppliedReport[]): Promise<void> {
    const projects = new Set<string>();
    for (const report of applied)
      if (report.projectId && (report.kind === 'hard' || report.kind === 'complaint'))
        projects.add(report.projectId);
    for (const projectId of projects) {
      try {
        await this.evaluate(projectId);
      } catch (error) {
        // The reports are committed; the next report or GET /project/health judges again.
        this.logger.error({ err: error, projectId }, 'sender health not judged');
      }
    }
  }

  private async read(projectId: string, judged?: HealthCounts): Promise<ProjectHealthResponse> {
    const project = await this.projects.findRow(projectId);
    if (!project) throw ApiException.notFound('project', projectId);
    const counts =
      judged ??
      (await this.emails.outcomesSince(
        this.dataSource.manager,
        projectId,
        HEALTH_WINDOW_DAYS,
        project.sendingWindowFrom,
      ));
    return toHealthResponse(project, counts);
  }
}

function toHealthResponse(project: Project, counts: HealthCounts): ProjectHealthResponse {
  return {
    windowDays: HEALTH_WINDOW_DAYS,
    ...counts,
    ...rates(counts),
    status: project.sendingStatus,
    reason: project.sendingReason,
    pausedAt: project.sendingPausedAt?.toISOString() ?? null,
  };
}
