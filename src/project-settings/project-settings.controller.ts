import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiListSuccess,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { IdParamDto } from '../common/validation/id.param';
import { ApiKeyType } from '../common/auth/api-key.crypto';
import { CreateApiKeyDto } from './dto/create-api-key.dto';
import { UpdateProjectDto } from './dto/update-project.dto';
import { CreatedApiKeyResponse } from '../projects/dto/created-api-key.response';
import { ProjectSettingsService } from './project-settings.service';
import { ApiKeyResponse } from '../projects/dto/api-key.response';
import { ProjectResponse } from '../projects/dto/project.response';
import { ProjectsService } from '../projects/projects.service';

/** The calling key's own project: lets a client check its key and see its keys. */
@ApiTags('project')
@ApiKeyProtected()
@Controller('project')
export class ProjectSettingsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly settings: ProjectSettingsService,
  ) {}

  @Get()
  @ApiOp('project_get', "The calling key's project (a cheap way to check a key)")
  @ApiSuccess(200, ProjectResponse)
  get(@CurrentProject() project: CurrentProjectInfo): Promise<ProjectResponse> {
    return this.projects.getProject(project.id);
  }

  @Patch()
  @ApiOp(
    'project_update',
    'Rename the project, set its default sender (defaultFrom: {email, name?} or null), its tracking domain (trackingDomain: a host name or null) or its double opt-in (doubleOptIn: {enabled, templateId?, confirmRedirectUrl?})',
  )
  @ApiSuccess(200, ProjectResponse)
  @ApiErrorResponses([400, 403, 404, 409, 413, 422], {
    404: 'TEMPLATE_NOT_FOUND (doubleOptIn.templateId is not a template of this project)',
    422: 'VALIDATION_ERROR, also doubleOptIn enabled without a defaultFrom',
    403: 'DOMAIN_NOT_VERIFIED (defaultFrom on a domain that is not verified while REQUIRE_VERIFIED_SENDER holds), PROJECT_DISABLED, or FORBIDDEN (a pk_ key)',
    409: 'CONFLICT: the trackingDomain is the verified tracking domain of another project',
  })
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() body: UpdateProjectDto,
  ): Promise<ProjectResponse> {
    return this.settings.update(project.id, body);
  }

  @Post('tracking-domain/verify')
  @HttpCode(200)
  @ApiOp(
    'project_verifyTrackingDomain',
    "Check the tracking domain's CNAME now; answers the project with the domain's new status",
  )
  @ApiSuccess(200, ProjectResponse)
  @ApiErrorResponses([404], {
    404: 'TRACKING_DOMAIN_NOT_FOUND: the project has no tracking domain',
  })
  verifyTrackingDomain(@CurrentProject() project: CurrentProjectInfo): Promise<ProjectResponse> {
    return this.settings.verifyTrackingDomain(project.id);
  }

  @Get('keys')
  @ApiOp('project_listKeys', "The project's API keys (prefixes only; never the secret)")
  @ApiListSuccess(ApiKeyResponse)
  @ApiErrorResponses([400])
  keys(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<ApiKeyResponse>> {
    return this.projects.pageKeys(project.id, query);
  }

  @Post('keys')
  @ApiOp(
    'project_createKey',
    'Create an API key for this project; the key is in this answer only (apiKey)',
    "A `secret` key (sk_) can call every endpoint and sign in to the dashboard; a `public` key (pk_) only POST /v1/track and /v1/subscribe. Only the key's SHA-256 is stored: store `apiKey` now.",
  )
  @ApiSuccess(201, CreatedApiKeyResponse)
  @ApiErrorResponses([400, 413, 422])
  createKey(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() body: CreateApiKeyDto,
  ): Promise<CreatedApiKeyResponse> {
    return this.projects.createKey(
      project.id,
      body.type === 'secret' ? ApiKeyType.SECRET : ApiKeyType.PUBLIC,
      body.name ?? null,
    );
  }

  @Delete('keys/:id')
  @ApiOp(
    'project_revokeKey',
    "Revoke one of the project's keys: it answers 401 from then on, and its dashboard sessions end",
    "The key stays in the listing as revoked. Revoking a revoked key answers it unchanged. The project's last active secret key cannot be revoked (409): create another first. The calling key may revoke itself when another secret key remains.",
  )
  @ApiSuccess(200, ApiKeyResponse)
  @ApiErrorResponses([400, 404, 409], {
    404: 'KEY_NOT_FOUND: no such key in this project',
    409: "CONFLICT: the project's last active secret key",
  })
  revokeKey(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<ApiKeyResponse> {
    return this.projects.revokeProjectKey(project.id, params.id);
  }
}
