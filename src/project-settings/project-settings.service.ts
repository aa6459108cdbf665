import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { normalizeDomainName } from '../domains/domain-name';
import { DomainsService } from '../domains/domains.service';
import { TrackingDomainVerifier } from '../domains/tracking-domain-verifier';
import { UpdateProjectDto } from './dto/update-project.dto';
import { ProjectResponse } from '../projects/dto/project.response';
import { ProjectsService } from '../projects/projects.service';

/**
 * A key's own project settings (PATCH /project). Apart from ProjectsService
 * because the default sender is checked against the project's domains and
 * the tracking domain by the domains' DNS checks, and the CLI and the
 * API-key guard, which use ProjectsService, need no domains.
 */
@Injectable()
export class ProjectSettingsService {
  constructor(
    private readonly projects: ProjectsService,
    private readonly domains: DomainsService,
    private readonly trackingDomains: TrackingDomainVerifier,
  ) {}

  async update(projectId: string, dto: UpdateProjectDto): Promise<ProjectResponse> {
    if (
      dto.name === undefined &&
      dto.defaultFrom === undefined &&
      dto.trackingDomain === undefined
    ) {
      throw ApiException.validation([
        {
          field: 'name',
          message: 'give name, defaultFrom, trackingDomain or several',
          code: 'required',
        },
      ]);
    }
    // The same rules as a sending domain's name: a public host name someone can own.
    let trackingDomain = dto.trackingDomain;
    if (typeof trackingDomain === 'string') {
      const name = normalizeDomainName(trackingDomain);
      if (!name.ok) {
        throw ApiException.validation([
          {
            field: 'trackingDomain',
            message: name.reason,
            code: name.tooLong ? 'too_big' : 'invalid_string',
          },
        ]);
      }
      trackingDomain = name.domain;
    }
    // The same rule as a send's sender: 403 DOMAIN_NOT_VERIFIED while REQUIRE_VERIFIED_SENDER holds.
    if (dto.defaultFrom) await this.domains.assertCanSend(projectId, dto.defaultFrom.email);
    return this.projects.updateProject(projectId, {
      name: dto.name,
      defaultFrom:
        dto.defaultFrom === undefined
          ? undefined
          : dto.defaultFrom && { email: dto.defaultFrom.email, name: dto.defaultFrom.name ?? null },
      trackingDomain,
    });
  }

  /** POST /project/tracking-domain/verify: checks the CNAME now and answers the project. */
  async verifyTrackingDomain(projectId: string): Promise<ProjectResponse> {
    if (!(await this.trackingDomains.verifyNow(projectId))) {
      throw new ApiException(
        404,
        'TRACKING_DOMAIN_NOT_FOUND',
        'The project has no tracking domain',
        { suggestion: 'Set one with PATCH /project {trackingDomain}' },
      );
    }
    return this.projects.getProject(projectId);
  }

  /** The on-demand TLS question (GET /tracking-domains/check): a malformed name is simply not one. */
  async assertVerifiedTrackingDomain(domain: string): Promise<{ domain: string }> {
    const name = normalizeDomainName(domain);
    if (!name.ok || !(await this.projects.isVerifiedTrackingDomain(name.domain))) {
      throw new ApiException(
        404,
        'TRACKING_DOMAIN_NOT_FOUND',
        `${domain} is not a verified tracking domain`,
      );
    }
    return { domain: name.domain };
  }
}
