import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { Page, paginate, PaginationQueryDto } from '../common/pagination/pagination';
import { isUuid, newId } from '../database/id';
import { ApiKeyType, displayPrefix, generateApiKey, hashApiKey } from '../common/auth/api-key.crypto';
import { ApiKeyCache } from '../common/auth/api-key-cache';
import { ApiKey } from './api-key.entity';
import { Project } from './project.entity';

export interface Sender {
  email: string;
  name: string | null;
}

export interface ProjectView {
  id: string;
  name: string;
  enabled: boolean;
  /** Sender of mail whose request and template name none. */
  defaultFrom: Sender | null;
  createdAt: string;
}

export interface ApiKeyView {
  id: string;
  projectId: string;
  type: 'secret' | 'public';
  prefix: string;
  revoked: boolean;
  createdAt: string;
  revokedAt: string | null;
}

@Injectable()
export class ProjectsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(Project) private readonly projects: Repository<Project>,
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    private readonly cache: ApiKeyCache,
  ) {}

  /** A new project comes with one secret and one public key; both are returned only here. */
  async createProject(
    name: string,
  ): Promise<{ project: ProjectView; secretKey: string; publicKey: string }> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 200) {
      throw ApiException.validation([{ field: 'name', message: 'name must be 1..200 characters', code: 'too_small' }]);
    }
    return this.dataSource.transaction(async (manager) => {
      const project = manager.create(Project, { id: newId(), name: trimmed, enabled: true });
      await manager.save(project);
      const secretKey = generateApiKey(ApiKeyType.SECRET);
      const publicKey = generateApiKey(ApiKeyType.PUBLIC);
      await manager.save(ApiKey, [this.keyRow(project.id, ApiKeyType.SECRET, secretKey), this.keyRow(project.id, ApiKeyType.PUBLIC, publicKey)]);
      return { project: toProjectView(project), secretKey, publicKey };
    });
  }

  async listProjects(): Promise<ProjectView[]> {
    const rows = await this.projects.find({ order: { id: 'DESC' } });
    return rows.map(toProjectView);
  }

  async getProject(projectId: string): Promise<ProjectView> {
    return toProjectView(await this.findProject(projectId));
  }

  /** PATCH /project: a new name and/or default sender (null removes it); absent fields stay. */
  async updateProject(projectId: string, changes: { name?: string; defaultFrom?: Sender | null }): Promise<ProjectView> {
    const project = await this.findProject(projectId);
    if (changes.name !== undefined) project.name = changes.name.trim();
    if (changes.defaultFrom !== undefined) {
      project.defaultFromEmail = changes.defaultFrom?.email ?? null;
      project.defaultFromName = changes.defaultFrom?.name ?? null;
    }
    await this.projects.save(project);
    if (changes.name !== undefined) await this.cache.invalidate();
    return toProjectView(project);
  }

  /** The project's default sender, read when a send names no sender of its own. */
  async defaultSender(projectId: string): Promise<Sender | null> {
    const rows: { email: string | null; name: string | null }[] = await this.dataSource.query(
      'SELECT default_from_email AS email, default_from_name AS name FROM projects WHERE id = $1',
      [projectId],
    );
    const row = rows[0];
    return row?.email ? { email: row.email, name: row.name } : null;
  }

  pageKeys(projectId: string, query: PaginationQueryDto): Promise<Page<ApiKeyView>> {
    const qb = this.keys.createQueryBuilder('k').where('k.project_id = :projectId', { projectId });
    return paginate(qb, 'k.id', query, toKeyView);
  }

  async setEnabled(projectId: string, enabled: boolean): Promise<ProjectView> {
    const project = await this.findProject(projectId);
    project.enabled = enabled;
    await this.projects.save(project);
    await this.cache.invalidate();
    return toProjectView(project);
  }

  async createKey(projectId: string, type: ApiKeyType): Promise<{ key: ApiKeyView; apiKey: string }> {
    await this.findProject(projectId);
    const apiKey = generateApiKey(type);
    const row = await this.keys.save(this.keyRow(projectId, type, apiKey));
    return { key: toKeyView(row), apiKey };
  }

  async revokeKey(keyId: string): Promise<ApiKeyView> {
    const row = isUuid(keyId) ? await this.keys.findOne({ where: { id: keyId } }) : null;
    if (!row) throw new ApiException(404, 'KEY_NOT_FOUND', `API key ${keyId} was not found`);
    if (!row.revokedAt) {
      row.revokedAt = new Date();
      await this.keys.save(row);
    }
    await this.cache.invalidate();
    return toKeyView(row);
  }

  async listKeys(projectId: string): Promise<ApiKeyView[]> {
    await this.findProject(projectId);
    const rows = await this.keys.find({ where: { projectId }, order: { id: 'DESC' } });
    return rows.map(toKeyView);
  }

  private async findProject(projectId: string): Promise<Project> {
    const project = isUuid(projectId) ? await this.projects.findOne({ where: { id: projectId } }) : null;
    if (!project) throw new ApiException(404, 'PROJECT_NOT_FOUND', `Project ${projectId} was not found`);
    return project;
  }

  private keyRow(projectId: string, type: ApiKeyType, apiKey: string): ApiKey {
    return this.keys.create({
      id: newId(),
      projectId,
      type,
      prefix: displayPrefix(apiKey),
      hash: hashApiKey(apiKey),
      revokedAt: null,
    });
  }
}

function toProjectView(p: Project): ProjectView {
  return {
    id: p.id,
    name: p.name,
    enabled: p.enabled,
    defaultFrom: p.defaultFromEmail ? { email: p.defaultFromEmail, name: p.defaultFromName } : null,
    createdAt: p.createdAt.toISOString(),
  };
}

function toKeyView(k: ApiKey): ApiKeyView {
  return {
    id: k.id,
    projectId: k.projectId,
    type: k.type === ApiKeyType.SECRET ? 'secret' : 'public',
    prefix: k.prefix,
    revoked: !!k.revokedAt,
    createdAt: k.createdAt.toISOString(),
    revokedAt: k.revokedAt ? k.revokedAt.toISOString() : null,
  };
}
