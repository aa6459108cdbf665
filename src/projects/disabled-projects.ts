import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AppConfig, runsWorkers } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ParkedJobs } from '../queue/parked-jobs';
import { ProjectsRepository } from './projects.repository';

/** How often a worker process reads which projects are disabled, and resumes the parked work of the enabled ones. */
export const DISABLED_REFRESH_MS = 1_000;

/**
 * Which projects are disabled, as the background workers see it: a disabled
 * project does no work (docs/operations.md, "Disabling a project"). The set
 * is read whole (one small statement) every DISABLED_REFRESH_MS in worker
 * processes, so a job's check is a set lookup; a disable or enable (the CLI,
 * any process) is seen within about a second. After each read, the parked
 * jobs (queue/parked-jobs.ts) of every project that is no longer disabled
 * are promoted: the project's mail and campaigns go on at once. Workflow
 * steps and webhook deliveries are not parked but left to their recovery
 * sweeps (every 5 s), which skip disabled projects.
 */
@Injectable()
export class DisabledProjects implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DisabledProjects.name);
  private disabled = new Set<string>();
  private loadedAt = 0;
  private loading: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly projects: ProjectsRepository,
    private readonly parked: ParkedJobs,
  ) {}

  onApplicationBootstrap(): void {
    if (runsWorkers(this.config)) this.schedule();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.loading?.catch(() => undefined);
  }

  /**
   * Whether the project is disabled; read again first only when the last read is older than two
   * periods (no timer here, or it stopped at shutdown). A caller inside a transaction passes its
   * `manager`: the read then goes through the connection it holds, never a second one from the
   * pool, which callers holding every connection (WEBHOOK steps ending at shutdown) would wait
   * for forever.
   */
  async isDisabled(projectId: string, manager?: EntityManager): Promise<boolean> {
    if (Date.now() - this.loadedAt > 2 * DISABLED_REFRESH_MS) {
      if (manager) this.loaded(await this.projects.disabledIds(manager));
      else await this.load();
    }
    return this.disabled.has(projectId);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.refresh().finally(() => this.schedule());
    }, DISABLED_REFRESH_MS);
    this.timer.unref();
  }

  private async refresh(): Promise<void> {
    try {
      await this.load();
      for (const projectId of await this.parked.projects()) {
        if (this.stopped || this.disabled.has(projectId)) continue;
        const promoted = await this.parked.resume(projectId);
        if (promoted > 0)
          this.logger.log({ projectId, promoted }, 'project enabled: parked work resumed');
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'cannot read the disabled projects; the next read retries');
    }
  }

  /** One read at a time; concurrent callers share it. */
  private load(): Promise<void> {
    this.loading ??= this.projects
      .disabledIds(this.dataSource.manager)
      .then((ids) => this.loaded(ids))
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }

  private loaded(ids: string[]): void {
    this.disabled = new Set(ids);
    this.loadedAt = Date.now();
  }
}
