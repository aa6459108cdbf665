import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { ProjectStatsQueryDto, ProjectStatsResponse } from './dto/project-stats';
import { ProjectStatsService } from './project-stats.service';

@ApiTags('project')
@ApiKeyProtected()
@Controller('project/stats')
export class ProjectStatsController {
  constructor(private readonly stats: ProjectStatsService) {}

  @Get()
  @ApiOp(
    'project_stats',
    'Sent, open, click, bounce and complaint figures of the last `days` UTC days (default 30, today included) and of the `days` before',
    'Read from per-day counters that triggers on the emails keep, so its cost is the days, not the emails; docs/deliverability.md explains them.',
  )
  @ApiSuccess(200, ProjectStatsResponse)
  @ApiErrorResponses([400])
  get(
    @CurrentProject() project: CurrentProjectInfo,
    @Query() query: ProjectStatsQueryDto,
  ): Promise<ProjectStatsResponse> {
    return this.stats.get(project.id, query.days ?? 30);
  }
}
