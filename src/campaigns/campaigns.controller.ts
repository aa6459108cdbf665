import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
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
import { DeletedResponse } from '../common/openapi/error-envelope.response';
import { Page } from '../common/pagination/pagination';
import { IdParamDto } from '../common/validation/id.param';
import { CampaignStatusService } from './campaign-status.service';
import { CampaignTestSendService } from './campaign-test-send.service';
import { CampaignsService } from './campaigns.service';
import { CampaignResponse, CampaignStatsResponse } from './dto/campaign.response';
import { CampaignTestResponse } from './dto/campaign-test.response';
import { CreateCampaignDto } from './dto/create-campaign.dto';
import { ListCampaignsQueryDto } from './dto/list-campaigns.query';
import { SendCampaignDto } from './dto/send-campaign.dto';
import { TestCampaignDto } from './dto/test-campaign.dto';
import { UpdateCampaignDto } from './dto/update-campaign.dto';

@ApiTags('campaigns')
@ApiKeyProtected()
@Controller('campaigns')
export class CampaignsController {
  constructor(
    private readonly campaigns: CampaignsService,
    private readonly status: CampaignStatusService,
    private readonly testSend: CampaignTestSendService,
  ) {}

  @Get()
  @ApiOp('campaigns_list', 'List campaigns, newest first (filters status, search)')
  @ApiListSuccess(CampaignResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ListCampaignsQueryDto,
  ): Promise<Page<CampaignResponse>> {
    return this.campaigns.list(project.id, query);
  }

  @Post()
  @ApiOp('campaigns_create', 'Create a DRAFT campaign')
  @ApiSuccess(201, CampaignResponse)
  @ApiErrorResponses([400, 403, 413, 422], {
    403: 'DOMAIN_NOT_VERIFIED: the sender domain is not verified for this project',
  })
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateCampaignDto,
  ): Promise<CampaignResponse> {
    return this.campaigns.create(project.id, dto);
  }

  @Get(':id')
  @ApiOp('campaigns_get', 'Get a campaign')
  @ApiSuccess(200, CampaignResponse)
  @ApiErrorResponses([400, 404])
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<CampaignResponse> {
    return this.campaigns.get(project.id, params.id);
  }

  @Patch(':id')
  @ApiOp(
    'campaigns_update',
    'Change a DRAFT or SCHEDULED campaign (scheduledAt: null returns it to DRAFT)',
  )
  @ApiSuccess(200, CampaignResponse)
  @ApiErrorResponses([400, 403, 404, 409, 413, 422], {
    409: 'CONFLICT: the campaign is SENDING, SENT or CANCELLED',
  })
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: UpdateCampaignDto,
  ): Promise<CampaignResponse> {
    return this.campaigns.update(project.id, params.id, dto);
  }

  @Delete(':id')
  @ApiOp('campaigns_delete', 'Delete a DRAFT campaign')
  @ApiDeletedSuccess()
  @ApiErrorResponses([400, 404, 409], { 409: 'CONFLICT: only DRAFT campaigns can be deleted' })
  remove(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<DeletedResponse> {
    return this.campaigns.remove(project.id, params.id);
  }

  @Post(':id/send')
  @HttpCode(202)
  @ApiOp('campaigns_send', 'Send now, or schedule with a future scheduledFor')
  @ApiSuccess(202, CampaignResponse)
  @ApiErrorResponses([400, 403, 404, 409, 422], {
    409: 'CONFLICT: the campaign is SENDING, SENT or CANCELLED',
  })
  send(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: SendCampaignDto,
  ): Promise<CampaignResponse> {
    return this.status.send(project.id, params.id, dto);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @ApiOp(
    'campaigns_cancel',
    'Cancel a SCHEDULED campaign, or stop a SENDING one (unsent emails become CANCELLED)',
  )
  @ApiSuccess(200, CampaignResponse)
  @ApiErrorResponses([400, 404, 409], { 409: 'CONFLICT: the campaign is DRAFT, SENT or CANCELLED' })
  cancel(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<CampaignResponse> {
    return this.status.cancel(project.id, params.id);
  }

  @Post(':id/pause')
  @HttpCode(200)
  @ApiOp('campaigns_pause', 'Pause a SENDING campaign: nothing more of it is handed to SMTP')
  @ApiSuccess(200, CampaignResponse)
  @ApiErrorResponses([400, 404, 409], { 409: 'CONFLICT: the campaign is not SENDING' })
  pause(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<CampaignResponse> {
    return this.status.pause(project.id, params.id);
  }

  @Post(':id/resume')
  @HttpCode(200)
  @ApiOp('campaigns_resume', 'Resume a PAUSED campaign where it stopped')
  @ApiSuccess(200, CampaignResponse)
  @ApiErrorResponses([400, 403, 404, 409], {
    403: 'SENDING_PAUSED: the project’s sender health is PAUSED',
    409: 'CONFLICT: the campaign is not PAUSED',
  })
  resume(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<CampaignResponse> {
    return this.status.resume(project.id, params.id);
  }

  @Post(':id/test')
  @HttpCode(202)
  @ApiOp(
    'campaigns_test',
    'Send the campaign to 1..5 addresses with "[TEST] " before the subject; no status or stats change',
  )
  @ApiSuccess(202, CampaignTestResponse)
  @ApiErrorResponses([400, 403, 404, 422])
  test(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: TestCampaignDto,
  ): Promise<CampaignTestResponse> {
    return this.testSend.test(project.id, params.id, dto);
  }

  @Get(':id/stats')
  @ApiOp(
    'campaigns_stats',
    'Exact counts of the campaign’s emails by status, unique opens and clicks, unsubscribes and rates',
  )
  @ApiSuccess(200, CampaignStatsResponse)
  @ApiErrorResponses([400, 404])
  stats(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<CampaignStatsResponse> {
    return this.campaigns.stats(project.id, params.id);
  }
}
