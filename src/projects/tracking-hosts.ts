import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { LruMap } from '../common/cache/lru-map';
import { linkBaseUrl } from '../common/http/link-base';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ProjectsRepository } from './projects.repository';

/** How long a project's answer is reused: other processes see a newly verified or cleared domain within it. */
const TTL_MS = 30_000;
const MAX_PROJECTS = 10_000;

interface Entry {
  base: string;
  expiresAt: number;
  generation: number;
}

/**
 * The origin of the links in a project's mail rendered at compose (the
 * unsubscribe link of mail stored rendered): its verified tracking domain or
 * PUBLIC_URL. Cached per project so a send adds no query; this process's own
 * changes (PATCH, a verify, the sweep) invalidate at once, other processes'
 * within TTL_MS. Delivery reads the domain with its claim instead.
 */
@Injectable()
export class TrackingHosts {
  private readonly entries = new LruMap<string, Entry>(MAX_PROJECTS);
  /** Bumped by invalidate: a read that began before it is answered but not cached. */
  private generation = 0;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly projects: ProjectsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async baseUrlOf(projectId: string): Promise<string> {
    const cached = this.entries.get(projectId);
    if (cached && cached.expiresAt > Date.now() && cached.generation === this.generation)
      return cached.base;
    const generation = this.generation;
    const domain = await this.projects.findVerifiedTrackingDomain(
      this.dataSource.manager,
      projectId,
    );
    const base = linkBaseUrl(this.config.publicUrl, domain);
    if (generation === this.generation)
      this.entries.set(projectId, { base, expiresAt: Date.now() + TTL_MS, generation });
    return base;
  }

  invalidate(projectId: string): void {
    this.entries.delete(projectId);
    this.generation++;
  }
}
