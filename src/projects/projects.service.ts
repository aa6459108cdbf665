import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { decodeCursor, Page, pageOf, PaginationQueryDto } from '../common/pagination/pagination';
import { isUuid, newId } from '../database/id';
import {
  ApiKeyType,
  displayPrefix,
  generateApiKey,
  hashApiKey,
} from '../common/auth/api-key.crypto';
import { ApiKeyCache } from '../common/auth/api-key-cache';
import { ApiKey } from './api-key.entity';
import { ApiKeyResponse } from './dto/api-key.response';
import { DoubleOptInChange, ProjectResponse, SenderResponse } from './dto/project.response';
import { Project, SendingStatus } from './project.entity';
import { NewApiKey, ProjectsRepository } from './projects.repository';

/** What POST /v1/subscribe and GET /confirm read of a project. */
export interface OptInSettings {
  name: string;
  enabled: boolean;
  templateId: string | null;
  confirmRedirectUrl: string | null;
  defaultFrom: SenderResponse | null;
}

@Injectable()
export class ProjectsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly projects: ProjectsRepository,
    private readonly cache: ApiKeyCache,
  ) {}

  /** A new project comes with one secret and one public key; both are returned only here. */
  async createProject(
    name: string,
  ): Promise<{ project: ProjectResponse; secretKey: string; publicKey: string }> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 200) {
      throw ApiException.validation([
        { field: 'name', message: 'name must be 1..200 characters', code: 'too_small' },
      ]);
    }
    return this.dataSource.transaction(async (manager) => {
      const project = await this.projects.insert(manager, {
        id: newId(),
        name: trimmed,
        enabled: true,
      });
      const secretKey = generateApiKey(ApiKeyType.SECRET);
      const publicKey = generateApiKey(ApiKeyType.PUBLIC);
      await this.projects.insertKeys(manager, [
        newKey(project.id, ApiKeyType.SECRET, secretKey),
        newKey(project.id, ApiKeyType.PUBLIC, publicKey),
      ]);
      return { project: toProjectResponse(project), secretKey, publicKey };
    });
  }

  async listProjects(): Promise<ProjectResponse[]> {
    const rows = await this.projects.listAll(this.dataSource.manager);
    return rows.map(toProjectResponse);
  }

  async getProject(projectId: string): Promise<ProjectResponse> {
    const project = isUuid(projectId)
      ? await this.projects.findById(this.dataSource.manager, projectId)
      : null;
    if (!project) throw projectNotFound(projectId);
    return toProjectResponse(project);
  }

  /**
   * PATCH /project: a new name, default sender (null removes it) and/or double
   * opt-in setting; absent fields stay. Double opt-in needs a default sender
   * (its built-in email is sent from it), checked on the locked row as the
   * change leaves it, so concurrent PATCHes cannot end with one and not the other.
   */
  async updateProject(
    projectId: string,
    changes: {
      name?: string;
      defaultFrom?: SenderResponse | null;
      doubleOptIn?: DoubleOptInChange;
    },
  ): Promise<ProjectResponse> {
    const project = await this.change(projectId, (row) => {
      if (changes.name !== undefined) row.name = changes.name.trim();
      if (changes.defaultFrom !== undefined) {
        row.defaultFromEmail = changes.defaultFrom?.email ?? null;
        row.defaultFromName = changes.defaultFrom?.name ?? null;
      }
      const optIn = changes.doubleOptIn;
      if (optIn) {
        row.doubleOptInEnabled = optIn.enabled;
        if (optIn.templateId !== undefined) row.doubleOptInTemplateId = optIn.templateId;
        if (optIn.confirmRedirectUrl !== undefined)
          row.confirmRedirectUrl = optIn.confirmRedirectUrl;
      }
      if (row.doubleOptInEnabled && !row.defaultFromEmail) {
        throw ApiException.validation([
          optIn?.enabled
            ? {
                field: 'doubleOptIn.enabled',
                message:
                  "double opt-in needs the project's defaultFrom (the confirmation email is sent from it): set defaultFrom first or in the same request",
                code: 'custom',
              }
            : {
                field: 'defaultFrom',
                message: 'defaultFrom cannot be removed while double opt-in is enabled',
                code: 'custom',
              },
        ]);
      }
    });
    if (changes.name !== undefined) await this.cache.invalidate();
    return toProjectResponse(project);
  }

  /**
   * 403 SENDING_PAUSED while the project's sender health is PAUSED: marketing
   * mail and campaigns wait for an operator's resume; transactional mail goes on.
   */
  async assertMarketingAllowed(
    projectId: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<void> {
    if (await this.isSendingPaused(projectId, manager)) throw sendingPaused();
  }

  async isSendingPaused(
    projectId: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<boolean> {
    return (await this.projects.findSendingStatus(manager, projectId)) === SendingStatus.PAUSED;
  }

  /** The project row (sender health reads), null when there is none. */
  findRow(projectId: string): Promise<Project | null> {
    return this.projects.findById(this.dataSource.manager, projectId);
  }

  /** The project row locked for a sender health change (null: no such project). */
  lockForHealth(manager: EntityManager, projectId: string): Promise<Project | null> {
    return this.projects.lockById(manager, projectId);
  }

  async setSendingHealth(
    manager: EntityManager,
    projectId: string,
    fields: Parameters<ProjectsRepository['setSendingHealth']>[2],
  ): Promise<void> {
    await this.projects.setSendingHealth(manager, projectId, fields);
  }

  /** The project's double opt-in setting and default sender (POST /v1/subscribe, GET /confirm); null: no such project. */
  async optInSettings(projectId: string): Promise<OptInSettings | null> {
    const row = await this.projects.findById(this.dataSource.manager, projectId);
    return row
      ? {
          name: row.name,
          enabled: row.doubleOptInEnabled,
          templateId: row.doubleOptInTemplateId,
          confirmRedirectUrl: row.confirmRedirectUrl,
          defaultFrom: row.defaultFromEmail
            ? { email: row.defaultFromEmail, name: row.defaultFromName }
            : null,
        }
      : null;
  }

  /** The project's default sender, read when a send names no sender of its own. */
  async defaultSender(projectId: string): Promise<SenderResponse | null> {
    const row = await this.projects.findDefaultSender(this.dataSource.manager, projectId);
    return row?.email ? { email: row.email, name: row.name } : null;
  }

  async pageKeys(projectId: string, query: PaginationQueryDto): Promise<Page<ApiKeyResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.projects.listKeys(
      this.dataSource.manager,
      projectId,
      afterId,
      limit,
    );
    return pageOf(rows, limit, total, toApiKeyResponse, (row) => row.id);
  }

  async setEnabled(projectId: string, enabled: boolean): Promise<ProjectResponse> {
    const project = await this.change(projectId, (row) => {
      row.enabled = enabled;
    });
    await this.cache.invalidate();
    return toProjectResponse(project);
  }

  async createKey(
    projectId: string,
    type: ApiKeyType,
  ): Promise<{ key: ApiKeyResponse; apiKey: string }> {
    await this.getProject(projectId);
    const apiKey = generateApiKey(type);
    const [row] = await this.projects.insertKeys(this.dataSource.manager, [
      newKey(projectId, type, apiKey),
    ]);
    return { key: toApiKeyResponse(row), apiKey };
  }

  async revokeKey(keyId: string): Promise<ApiKeyResponse> {
    const row = isUuid(keyId)
      ? await this.projects.revokeKey(this.dataSource.manager, keyId)
      : null;
    if (!row) throw new ApiException(404, 'KEY_NOT_FOUND', `API key ${keyId} was not found`);
    await this.cache.invalidate();
    return toApiKeyResponse(row);
  }

  async listKeys(projectId: string): Promise<ApiKeyResponse[]> {
    await this.getProject(projectId);
    const rows = await this.projects.keysOf(this.dataSource.manager, projectId);
    return rows.map(toApiKeyResponse);
  }

  /** Read-modify-write of one project, the row locked in between. */
  private change(projectId: string, apply: (row: Project) => void): Promise<Project> {
    return this.dataSource.transaction(async (manager) => {
      const row = isUuid(projectId) ? await this.projects.lockById(manager, projectId) : null;
      if (!row) throw projectNotFound(projectId);
      apply(row);
      return this.projects.update(manager, row);
    });
  }
}

function projectNotFound(projectId: string): ApiException {
  return new ApiException(404, 'PROJECT_NOT_FOUND', `Project ${projectId} was not found`);
}

function newKey(projectId: string, type: ApiKeyType, apiKey: string): NewApiKey {
  return {
    id: newId(),
    projectId,
    type,
    prefix: displayPrefix(apiKey),
    hash: hashApiKey(apiKey),
    revokedAt: null,
  };
}

function toProjectResponse(p: Project): ProjectResponse {
  return {
    id: p.id,
    name: p.name,
    enabled: p.enabled,
    defaultFrom: p.defaultFromEmail ? { email: p.defaultFromEmail, name: p.defaultFromName } : null,
    doubleOptIn: {
      enabled: p.doubleOptInEnabled,
      templateId: p.doubleOptInTemplateId,
      confirmRedirectUrl: p.confirmRedirectUrl,
    },
    createdAt: p.createdAt.toISOString(),
  };
}

function toApiKeyResponse(k: ApiKey): ApiKeyResponse {
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

export function sendingPaused(): ApiException {
  return new ApiException(
    403,
    'SENDING_PAUSED',
    'Sending is paused for this project: its bounce or complaint rate crossed the sender health threshold',
    {
      suggestion:
        'Check GET /project/health, clean the list (GET /suppressions), then POST /project/health/resume. Transactional mail still goes.',
    },
  );
}
