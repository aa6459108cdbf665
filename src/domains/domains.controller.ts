import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiDeletedSuccess,
  ApiErrorResponses,
  ApiKeyProtected,
  ApiListSuccess,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { Page } from '../common/pagination/pagination';
import { IdParamDto } from '../common/validation/id.param';
import { DomainsService } from './domains.service';
import { CreateDomainDto } from './dto/create-domain.dto';
import { DomainResponse } from './dto/domain.response';
import { ListDomainsQueryDto } from './dto/list-domains.query';

@ApiTags('domains')
@ApiKeyProtected()
@Controller('domains')
export class DomainsController {
  constructor(private readonly domains: DomainsService) {}

  @Get()
  @ApiOp('domains_list', "List the project's sending domains (?status= filters)")
  @ApiListSuccess(DomainResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListDomainsQueryDto,
  ): Promise<Page<DomainResponse>> {
    return this.domains.list(project.id, query);
  }

  @Post()
  @ApiOp(
    'domains_create',
    'Add a sending domain; answers the DNS records to publish. A first check runs right after.',
  )
  @ApiSuccess(201, DomainResponse)
  @ApiErrorResponses([400, 409, 413, 422], { 409: 'CONFLICT: this project already has the domain' })
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() body: CreateDomainDto,
  ): Promise<DomainResponse> {
    return this.domains.create(project.id, body.domain);
  }

  @Get(':id')
  @ApiOp('domains_get', 'Get a domain with its DNS records and their status')
  @ApiSuccess(200, DomainResponse)
  @ApiErrorResponses([400, 404])
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<DomainResponse> {
    return this.domains.get(project.id, params.id);
  }

  @Post(':id/verify')
  @HttpCode(200)
  @ApiOp('domains_verify', 'Check the DNS records now and answer the updated domain')
  @ApiSuccess(200, DomainResponse)
  @ApiErrorResponses([400, 404])
  verify(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<DomainResponse> {
    return this.domains.verify(project.id, params.id);
  }

  @Delete(':id')
  @ApiOp('domains_delete', 'Remove a domain; sending from it is refused from then on')
  @ApiDeletedSuccess()
  @ApiErrorResponses([400, 404])
  remove(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<{ id: string; deleted: true }> {
    return this.domains.remove(project.id, params.id);
  }
}
