import { Body, Controller, Get, Patch, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { Page, PaginationQueryDto } from '../common/pagination/pagination';
import { UpdateProjectDto } from './dto/update-project.dto';
import { ProjectSettingsService } from './project-settings.service';
import { ApiKeyView, ProjectsService, ProjectView } from './projects.service';

/** The calling key's own project: lets a client check its key and see its keys. */
@ApiTags('project')
@ApiBearerAuth()
@Controller('project')
export class ProjectsController {
  constructor(
    private readonly projects: ProjectsService,
    private readonly settings: ProjectSettingsService,
  ) {}

  @Get()
  get(@CurrentProject() project: CurrentProjectInfo): Promise<ProjectView> {
    return this.projects.getProject(project.id);
  }

  @Patch()
  update(@CurrentProject() project: CurrentProjectInfo, @Body() body: UpdateProjectDto): Promise<ProjectView> {
    return this.settings.update(project.id, body);
  }

  @Get('keys')
  keys(@CurrentProject() project: CurrentProjectInfo, @Query() query: PaginationQueryDto): Promise<Page<ApiKeyView>> {
    return this.projects.pageKeys(project.id, query);
  }
}
