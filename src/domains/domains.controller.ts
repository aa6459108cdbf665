import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { Page } from '../common/pagination/pagination';
import { DomainsService } from './domains.service';
import { CreateDomainDto } from './dto/create-domain.dto';
import { DomainIdParam } from './dto/domain-id.param';
import { DomainResponse } from './dto/domain.response';
import { ListDomainsQueryDto } from './dto/list-domains.query';

@ApiTags('Domains')
@Controller('domains')
export class DomainsController {
  constructor(private readonly domains: DomainsService) {}

  @Get()
  @ApiOperation({ summary: "List the project's sending domains (?status= filters)" })
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListDomainsQueryDto,
  ): Promise<Page<DomainResponse>> {
    return this.domains.list(project.id, query);
  }

  @Post()
  @ApiOperation({
    summary:
      'Add a sending domain; answers the DNS records to publish. A first check runs right after.',
  })
  @ApiOkResponse({ type: DomainResponse })
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() body: CreateDomainDto,
  ): Promise<DomainResponse> {
    return this.domains.create(project.id, body.domain);
  }

  @Get(':id')
  @ApiOkResponse({ type: DomainResponse })
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: DomainIdParam,
  ): Promise<DomainResponse> {
    return this.domains.get(project.id, params.id);
  }

  @Post(':id/verify')
  @HttpCode(200)
  @ApiOperation({ summary: 'Check the DNS records now and answer the updated domain' })
  @ApiOkResponse({ type: DomainResponse })
  verify(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: DomainIdParam,
  ): Promise<DomainResponse> {
    return this.domains.verify(project.id, params.id);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Remove a domain; sending from it is refused from then on' })
  remove(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: DomainIdParam,
  ): Promise<{ id: string; deleted: true }> {
    return this.domains.remove(project.id, params.id);
  }
}
