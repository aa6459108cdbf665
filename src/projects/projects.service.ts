import { Inject, Injectable } from '@nestjs/common';
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
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { SQLSTATE, sqlState } from '../database/postgres-errors';
import { ApiKey } from './api-key.entity';
import { ApiKeyResponse } from './dto/api-key.response';
import { CreatedApiKeyResponse } from './dto/created-api-key.response';
import {
  DoubleOptInChange,
  ProjectResponse,
  SenderResponse,
  TrackingDomainResponse,
} from './dto/project.response';
import { Project, SendingStatus, TrackingDomainStatus } from './project.entity';
import {
  NewApiKey,
  ProjectsRepository,
  TrackingDomainCheck,
  TrackingDomainRow,
} from './projects.repository';
import { TrackingHosts } from './tracking-hosts';

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
    private readonly trackingHosts: TrackingHosts,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
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
      return { project: this.toResponse(project), secretKey, publicKey };
    });
  }

  async listProjects(): Promise<ProjectResponse[]> {
    const rows = await this.projects.listAll(this.dataSource.manager);
    return rows.map((row) => this.toResponse(row));
  }

  async getProject(projectId: string): Promise<ProjectResponse> {
    const project = isUuid(projectId)
      ? await this.projects.findById(this.dataSource.manager, projectId)
      : null;
    if (!project) throw projectNotFound(projectId);
    return this.toResponse(project);
  }

  /**
   * PATCH /project: a new name, default sender, tracking domain (null
   * removes either) and/or double opt-in setting; absent fields stay. A new
   * tracking domain starts PENDING: links keep PUBLIC_URL's host until it is
   * verified. `trackingDomain` comes normalised (domains/domain-name.ts).
   * Double opt-in needs a default sender (its built-in email is sent from
   * it), checked on the locked row as the change leaves it, so concurrent
   * PATCHes cannot end with one and not the other.
   */
  async updateProject(
    projectId: string,
    changes: {
      name?: string;
      defaultFrom?: SenderResponse | null;
      trackingDomain?: string | null;
      doubleOptIn?: DoubleOptInChange;
    },
  ): Promise<ProjectResponse> {
    let trackingChanged = false;
    const project = await this.change(projectId, async (row, manager) => {
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
      const domain = changes.trackingDomain;
      if (domain === undefined || domain === row.trackingDomain) return;
      if (
        domain !== null &&
        (await this.projects.verifiedTrackingDomainHolder(manager, domain, row.id))
      )
        throw trackingDomainTaken(domain);
      trackingChanged = true;
      row.trackingDomain = domain;
      row.trackingDomainStatus = domain === null ? null : TrackingDomainStatus.PENDING;
      row.trackingDomainRecord = null;
      // Whole milliseconds, as JavaScript reads it back: checks compare it to tell settings apart.
      row.trackingDomainSetAt = domain === null ? null : new Date();
      row.trackingDomainCheckedAt = null;
    });
    if (changes.name !== undefined) await this.cache.invalidate();
    if (trackingChanged) this.trackingHosts.invalidate(projectId);
    return this.toResponse(project);
  }

  /** The project's tracking domain as a check reads it; null when it has none. */
  trackingDomainOf(projectId: string): Promise<TrackingDomainRow | null> {
    return this.projects.findTrackingDomain(this.dataSource.manager, projectId);
  }

  /** The sweep's due tracking domains (see ProjectsRepository.findTrackingDomainsDue). */
  trackingDomainsDue(dueBefore: Date, limit: number): Promise<TrackingDomainRow[]> {
    return this.projects.findTrackingDomainsDue(this.dataSource.manager, dueBefore, limit);
  }

  /** Whether another project holds `domain` VERIFIED: then it verifies for no one else. */
  async trackingDomainHeldByOther(domain: string, projectId: string): Promise<boolean> {
    const holder = await this.projects.verifiedTrackingDomainHolder(
      this.dataSource.manager,
      domain,
      projectId,
    );
    return holder !== null;
  }

  /**
   * Writes a check of a tracking domain (see ProjectsRepository.saveTrackingCheck).
   * 'taken' when it would be VERIFIED but another project's verification won the race.
   */
  async saveTrackingCheck(
    checked: TrackingDomainRow,
    check: TrackingDomainCheck,
    notAfter: Date | null,
  ): Promise<'written' | 'stale' | 'taken'> {
    try {
      const written = await this.projects.saveTrackingCheck(
        this.dataSource.manager,
        checked,
        check,
        notAfter,
      );
      if (written && check.status !== checked.status)
        this.trackingHosts.invalidate(checked.projectId);
      return written ? 'written' : 'stale';
    } catch (error) {
      if (sqlState(error) === SQLSTATE.UNIQUE_VIOLATION) return 'taken';
      throw error;
    }
  }

  /** Whether `domain` is a VERIFIED tracking domain (the on-demand TLS question). */
  isVerifiedTrackingDomain(domain: string): Promise<boolean> {
    return this.projects.isVerifiedTrackingDomain(this.dataSource.manager, domain);
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
    return this.toResponse(project);
  }

  /** A new key of the project (CLI `keys create`, POST /project/keys); the key itself is returned only here. */
  async createKey(
    projectId: string,
    type: ApiKeyType,
    name: string | null = null,
  ): Promise<CreatedApiKeyResponse> {
    await this.getProject(projectId);
    const apiKey = generateApiKey(type);
    const [row] = await this.projects.insertKeys(this.dataSource.manager, [
      newKey(projectId, type, apiKey, name),
    ]);
    return { key: toApiKeyResponse(row), apiKey };
  }

  /**
   * DELETE /project/keys/{id}: revokes one of the project's own keys (its dashboard sessions end
   * with it: their lookup ignores revoked keys). The project's last unrevoked secret key cannot be
   * revoked this way, or the project would lock itself out of its own API (409; the CLI, which
   * needs no key, still can). The project row is locked so that two concurrent revocations of its
   * last two secret keys cannot both pass the count. Revoking a revoked key answers it unchanged.
   */
  async revokeProjectKey(projectId: string, keyId: string): Promise<ApiKeyResponse> {
    const row = await this.dataSource.transaction(async (manager) => {
      await this.projects.lockById(manager, projectId);
      const key = isUuid(keyId)
        ? await this.projects.findKeyOfProject(manager, projectId, keyId)
        : null;
      if (!key) throw keyNotFound(keyId);
      if (key.revokedAt) return key;
      if (
        key.type === ApiKeyType.SECRET &&
        (await this.projects.countActiveSecretKeys(manager, projectId)) <= 1
      ) {
        throw ApiException.conflict(
          "This is the project's last active secret key: revoking it would lock the project out of its API",
          'Create another secret key first (POST /project/keys), then revoke this one.',
        );
      }
      return this.projects.revokeKey(manager, key.id);
    });
    await this.cache.invalidate();
    return toApiKeyResponse(row!);
  }

  async revokeKey(keyId: string): Promise<ApiKeyResponse> {
    const row = isUuid(keyId)
      ? await this.projects.revokeKey(this.dataSource.manager, keyId)
      : null;
    if (!row) throw keyNotFound(keyId);
    await this.cache.invalidate();
    return toApiKeyResponse(row);
  }

  async listKeys(projectId: string): Promise<ApiKeyResponse[]> {
    await this.getProject(projectId);
    const rows = await this.projects.keysOf(this.dataSource.manager, projectId);
    return rows.map(toApiKeyResponse);
  }

  /** Read-modify-write of one project, the row locked in between. */
  private change(
    projectId: string,
    apply: (row: Project, manager: EntityManager) => void | Promise<void>,
  ): Promise<Project> {
    return this.dataSource.transaction(async (manager) => {
      const row = isUuid(projectId) ? await this.projects.lockById(manager, projectId) : null;
      if (!row) throw projectNotFound(projectId);
      await apply(row, manager);
      return this.projects.update(manager, row);
    });
  }

  private toResponse(p: Project): ProjectResponse {
    return {
      id: p.id,
      name: p.name,
      enabled: p.enabled,
      defaultFrom: p.defaultFromEmail
        ? { email: p.defaultFromEmail, name: p.defaultFromName }
        : null,
      trackingDomain: this.trackingDomainResponse(p),
      doubleOptIn: {
        enabled: p.doubleOptInEnabled,
        templateId: p.doubleOptInTemplateId,
        confirmRedirectUrl: p.confirmRedirectUrl,
      },
      createdAt: p.createdAt.toISOString(),
    };
  }

  private trackingDomainResponse(p: Project): TrackingDomainResponse | null {
    if (!p.trackingDomain || !p.trackingDomainStatus) return null;
    const record = p.trackingDomainRecord;
    return {
      domain: p.trackingDomain,
      status: p.trackingDomainStatus,
      record: {
        type: 'CNAME',
        name: p.trackingDomain,
        value: this.config.trackingCnameTarget,
        status: record?.status ?? TrackingDomainStatus.PENDING,
        ...(record?.found ? { found: record.found } : {}),
        ...(record?.error ? { error: record.error } : {}),
      },
    };
  }
}

function trackingDomainTaken(domain: string): ApiException {
  return new ApiException(
    409,
    'CONFLICT',
    `${domain} is the verified tracking domain of another project`,
  );
}

function projectNotFound(projectId: string): ApiException {
  return new ApiException(404, 'PROJECT_NOT_FOUND', `Project ${projectId} was not found`);
}

function keyNotFound(keyId: string): ApiException {
  return new ApiException(404, 'KEY_NOT_FOUND', `API key ${keyId} was not found`);
}

function newKey(
  projectId: string,
  type: ApiKeyType,
  apiKey: string,
  name: string | null = null,
): NewApiKey {
  return {
    id: newId(),
    projectId,
    name,
    type,
    prefix: displayPrefix(apiKey),
    hash: hashApiKey(apiKey),
    revokedAt: null,
  };
}

function toApiKeyResponse(k: ApiKey): ApiKeyResponse {
  return {
    id: k.id,
    projectId: k.projectId,
    name: k.name,
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
