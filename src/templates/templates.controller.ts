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
import { IdParamDto } from '../common/validation/id.param';
import { CreateTemplateDto } from './dto/create-template.dto';
import { ListTemplatesQueryDto } from './dto/list-templates.query';
import { PreviewTemplateDto } from './dto/preview-template.dto';
import { UpdateTemplateDto } from './dto/update-template.dto';
import { TemplatePreviewResponse, TemplateResponse } from './dto/template.response';
import { TemplatesService } from './templates.service';

@ApiTags('templates')
@ApiKeyProtected()
@Controller('templates')
export class TemplatesController {
  constructor(private readonly templates: TemplatesService) {}

  @Post()
  @ApiOp(
    'templates_create',
    'Create a template (422 invalid_template when the Liquid does not parse)',
  )
  @ApiSuccess(201, TemplateResponse)
  @ApiErrorResponses([400, 413, 422])
  create(@CurrentProject() project: CurrentProjectInfo, @Body() dto: CreateTemplateDto) {
    return this.templates.create(project.id, dto);
  }

  @Get()
  @ApiOp('templates_list', 'List templates, newest first (filters type, search)')
  @ApiListSuccess(TemplateResponse)
  @ApiErrorResponses([400])
  list(@CurrentProject() project: CurrentProjectInfo, @Query() query: ListTemplatesQueryDto) {
    return this.templates.list(project.id, query);
  }

  @Get(':id')
  @ApiOp('templates_get', 'Get a template')
  @ApiSuccess(200, TemplateResponse)
  @ApiErrorResponses([404])
  get(@CurrentProject() project: CurrentProjectInfo, @Param() { id }: IdParamDto) {
    return this.templates.get(project.id, id);
  }

  @Patch(':id')
  @ApiOp(
    'templates_update',
    'Update a template; from, fromName and replyTo may be cleared with null',
  )
  @ApiSuccess(200, TemplateResponse)
  @ApiErrorResponses([400, 404, 413, 422])
  update(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() { id }: IdParamDto,
    @Body() dto: UpdateTemplateDto,
  ) {
    return this.templates.update(project.id, id, dto);
  }

  @Delete(':id')
  @ApiOp('templates_delete', 'Delete a template')
  @ApiDeletedSuccess()
  @ApiErrorResponses([404])
  remove(@CurrentProject() project: CurrentProjectInfo, @Param() { id }: IdParamDto) {
    return this.templates.remove(project.id, id);
  }

  @Post(':id/preview')
  @HttpCode(200)
  @ApiOp(
    'templates_preview',
    'Render a template, or an unsaved subject/body in its place, with a contact and/or data, without sending',
  )
  @ApiSuccess(200, TemplatePreviewResponse)
  @ApiErrorResponses([400, 404, 413, 422])
  preview(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() { id }: IdParamDto,
    @Body() dto: PreviewTemplateDto,
  ) {
    return this.templates.preview(project.id, id, dto);
  }
}
