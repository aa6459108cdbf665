import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { isUuid } from '../database/id';
import { SYSTEM_EVENTS } from '../events/event-names';
import type { EventRow } from '../events/event.row';
import { EventsService } from '../events/events.service';
import { Project, SendingStatus } from '../projects/project.entity';
import { ProjectsService } from '../projects/projects.service';

/**
 * The sender health status of a project and its events: the operator's
 * resume (API and CLI, which has no queues: hence apart from SenderHealth).
 */
@Injectable()
export class SenderHealthStatus {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly projects: ProjectsService,
    private readonly events: EventsService,
  ) {}

  /**
   * → HEALTHY, recording `project.sending_resumed` when it was not; the
   * thresholds count mail from now on. Paused campaigns stay PAUSED.
   */
  async resume(projectId: string): Promise<Project> {
    const { project, event } = await this.dataSource.transaction(async (manager) => {
      const row = isUuid(projectId) ? await this.projects.lockForHealth(manager, projectId) : null;
      if (!row) throw ApiException.notFound('project', projectId);
      const previous = row.sendingStatus;
      await this.projects.setSendingHealth(manager, row.id, {
        sendingStatus: SendingStatus.HEALTHY,
        sendingReason: null,
        sendingPausedAt: null,
        sendingWindowFrom: new Date(),
      });
      const event =
        previous === SendingStatus.HEALTHY
          ? null
          : await this.record(manager, row.id, SYSTEM_EVENTS.PROJECT_SENDING_RESUMED, {
              previousStatus: previous,
            });
      return {
        project: (await this.projects.lockForHealth(manager, row.id)) as Project,
        event,
      };
    });
    if (event) await this.events.publish([{ ...event, email: null }]);
    return project;
  }

  /** A project event (no contact), delivered to webhooks through the events table. */
  record(
    manager: EntityManager,
    projectId: string,
    name: string,
    data: Record<string, unknown>,
  ): Promise<EventRow> {
    return this.events.record(manager, { projectId, contactId: null, name, data });
  }
}
