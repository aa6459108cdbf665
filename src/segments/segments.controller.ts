import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Patch,
  Post,
  Query,
  UseInterceptors,
} from '@nestjs/common';
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
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { ExpensiveWorkGate } from '../common/rate-limit/expensive-work.interceptor';
import { IdParamDto } from '../common/validation/id.param';
import { ContactResponse } from '../contacts/dto/contact.response';
import { CreateSegmentDto } from './dto/create-segment.dto';
import { PreviewSegmentDto } from './dto/preview-segment.dto';
import { SegmentPreviewResponse, SegmentResponse } from './dto/segment.response';
import { UpdateSegmentDto } from './dto/update-segment.dto';
import { SegmentsService } from './segments.service';

@ApiTags('segments')
@ApiKeyProtected()
@Controller('segments')
export class SegmentsController {
  constructor(private readonly segments: SegmentsService) {}

  @Get()
  @ApiOp('segments_list', 'List segments (newest first)')
  @ApiListSuccess(SegmentResponse)
  @ApiErrorResponses([400])
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<SegmentResponse>> {
    return this.segments.list(project.id, query);
  }

  @Post()
  @ApiOp(
    'segments_create',
    'Create a segment from a condition (422 with paths into the condition when invalid)',
  )
  @ApiSuccess(201, SegmentResponse)
  @ApiErrorResponses([400, 413, 422])
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateSegmentDto,
  ): Promise<SegmentResponse> {
    return this.segments.create(project.id, dto);
  }

  @Post('preview')
  @HttpCode(200)
  @ApiOp(
    'segments_preview',
    'Count and sample (10 newest) the contacts an unsaved condition matches',
  )
  @ApiSuccess(200, SegmentPreviewResponse)
  @ApiErrorResponses([400, 413, 422])
  @UseInterceptors(ExpensiveWorkGate)
  preview(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: PreviewSegmentDto,
  ): Promise<SegmentPreviewResponse> {
    return this.segments.preview(project.id, dto);
  }

  @Get(':id')
  @ApiOp('segments_get', 'Get a segment with its member count')
  @ApiSuccess(200, SegmentResponse)
  @ApiErrorResponses([400, 404])
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<SegmentResponse> {
    return this.segments.get(project.id, params.id);
  }

  @Patch(':id')
  @ApiOp('segments_update', 'Update name, description or condition')
  @ApiSuccess(200, SegmentResponse)
  @ApiErrorResponses([400, 404, 413, 422])
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Body() dto: UpdateSegmentDto,
  ): Promise<SegmentResponse> {
    return this.segments.update(project.id, params.id, dto);
  }

  @Delete(':id')
  @ApiOp('segments_delete', 'Delete a segment (409 while another segment refers to it)')
  @ApiDeletedSuccess()
  @ApiErrorResponses([400, 404, 409], {
    409: 'CONFLICT: the membership rule of another segment names this one',
  })
  remove(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
  ): Promise<DeletedResponse> {
    return this.segments.remove(project.id, params.id);
  }

  @Get(':id/contacts')
  @ApiOp(
    'segments_listContacts',
    'List the contacts matching the segment now (contact list envelope)',
  )
  @ApiListSuccess(ContactResponse)
  @ApiErrorResponses([400, 404])
  members(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: IdParamDto,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<ContactResponse>> {
    return this.segments.members(project.id, params.id, query);
  }
}
