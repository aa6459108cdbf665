import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { ContactView } from '../contacts/contact.view';
import {
  CreateSegmentDto,
  PreviewSegmentDto,
  SegmentIdParamDto,
  UpdateSegmentDto,
} from './dto/segment.dto';
import { SegmentPreviewView, SegmentView } from './segment.view';
import { SegmentsService } from './segments.service';

@ApiTags('segments')
@Controller('segments')
export class SegmentsController {
  constructor(private readonly segments: SegmentsService) {}

  @Get()
  @ApiOperation({ summary: 'List segments (newest first)' })
  list(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<SegmentView>> {
    return this.segments.list(project.id, query);
  }

  @Post()
  @ApiOperation({
    summary: 'Create a segment from a condition (422 with paths into the condition when invalid)',
  })
  create(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateSegmentDto,
  ): Promise<SegmentView> {
    return this.segments.create(project.id, dto);
  }

  @Post('preview')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Count and sample (10 newest) the contacts an unsaved condition matches',
  })
  preview(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: PreviewSegmentDto,
  ): Promise<SegmentPreviewView> {
    return this.segments.preview(project.id, dto);
  }

  @Get(':id')
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: SegmentIdParamDto,
  ): Promise<SegmentView> {
    return this.segments.get(project.id, params.id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Update name, description or condition' })
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: SegmentIdParamDto,
    @Body() dto: UpdateSegmentDto,
  ): Promise<SegmentView> {
    return this.segments.update(project.id, params.id, dto);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete a segment (409 while another segment refers to it)' })
  delete(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: SegmentIdParamDto,
  ): Promise<{ id: string; deleted: true }> {
    return this.segments.delete(project.id, params.id);
  }

  @Get(':id/contacts')
  @ApiOperation({ summary: 'List the contacts matching the segment now (contact list envelope)' })
  members(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: SegmentIdParamDto,
    @Query() query: PaginationQueryDto,
  ): Promise<Page<ContactView>> {
    return this.segments.members(project.id, params.id, query);
  }
}
