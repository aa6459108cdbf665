import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { DomainsService } from '../domains/domains.service';
import { UpdateProjectDto } from './dto/update-project.dto';
import { ProjectResponse } from '../projects/dto/project.response';
import { ProjectsService } from '../projects/projects.service';
import { TemplatesService } from '../templates/templates.service';

/**
 * A key's own project settings (PATCH /project). Apart from ProjectsService
 * because the default sender is checked against the project's domains (and the
 * confirmation template against its templates), and the CLI and the API-key
 * guard, which use ProjectsService, need neither.
 */
@Injectable()
export class ProjectSettingsService {
  constructor(
    private readonly projects: ProjectsService,
    private readonly domains: DomainsService,
    private readonly templates: TemplatesService,
  ) {}

  async update(projectId: string, dto: UpdateProjectDto): Promise<ProjectResponse> {
    if (dto.name === undefined && dto.defaultFrom === undefined && dto.doubleOptIn === undefined) {
      throw ApiException.validation([
        {
          field: 'name',
          message: 'give at least one of name, defaultFrom and doubleOptIn',
          code: 'required',
        },
      ]);
    }
    // The same rule as a send's sender: 403 DOMAIN_NOT_VERIFIED while REQUIRE_VERIFIED_SENDER holds.
    if (dto.defaultFrom) await this.domains.assertCanSend(projectId, dto.defaultFrom.email);
    // Another project's template is not found, as everywhere else.
    const templateId = dto.doubleOptIn?.templateId;
    if (templateId) await this.templates.findOrFail(projectId, templateId);
    return this.projects.updateProject(projectId, {
      name: dto.name,
      defaultFrom:
        dto.defaultFrom === undefined
          ? undefined
          : dto.defaultFrom && { email: dto.defaultFrom.email, name: dto.defaultFrom.name ?? null },
      doubleOptIn: dto.doubleOptIn && {
        enabled: dto.doubleOptIn.enabled,
        templateId: dto.doubleOptIn.templateId,
        confirmRedirectUrl: dto.doubleOptIn.confirmRedirectUrl,
      },
    });
  }
}
