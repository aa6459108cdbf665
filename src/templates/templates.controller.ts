import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  CreateTemplateDto,
  ListTemplatesQueryDto,
  PreviewTemplateDto,
  TemplatePreviewResponse,
  TemplateResponse,
  UpdateTemplateDto,
} from './dto/template.dto';
import { TemplatesService } from './templates.service';

@ApiTags('templates')
@Controller('templates')
export class TemplatesController {
  constructor(private readonly templates: TemplatesService) {}

  @Post()
  @ApiOkResponse({ type: TemplateResponse })
  create(@CurrentProject() project: CurrentProjectInfo, @Body() dto: CreateTemplateDto) {
    return this.templates.create(project.id, dto);
  }

  @Get()
  list(@CurrentProject() project: CurrentProjectInfo, @Query() query: ListTemplatesQueryDto) {
    return this.templates.list(project.id, query);
  }

  @Get(':id')
  @ApiOkResponse({ type: TemplateResponse })
  get(@CurrentProject() project: CurrentProjectInfo, @Param('id') id: string) {
    return this.templates.get(project.id, id);
  }

  @Patch(':id')
  @ApiOkResponse({ type: TemplateResponse })
  update(@CurrentProject() project: CurrentProjectInfo, @Param('id') id: string, @Body() dto: UpdateTemplateDto) {
    return this.templates.update(project.id, id, dto);
  }

  @Delete(':id')
  remove(@CurrentProject() project: CurrentProjectInfo, @Param('id') id: string) {
    return this.templates.remove(project.id, id);
  }

  @Post(':id/preview')
  @HttpCode(200)
  @ApiOkResponse({ type: TemplatePreviewResponse })
  preview(@CurrentProject() project: CurrentProjectInfo, @Param('id') id: string, @Body() dto: PreviewTemplateDto) {
    return this.templates.preview(project.id, id, dto);
  }
}
