import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { ProjectHealthResponse } from './dto/project-health.response';
import { SenderHealth } from './sender-health';

@ApiTags('project')
@ApiKeyProtected()
@Controller('project/health')
export class ProjectHealthController {
  constructor(private readonly health: SenderHealth) {}

  @Get()
  @ApiOp('project_health', 'Sender health: 7-day bounce and complaint rates and status')
  @ApiSuccess(200, ProjectHealthResponse)
  @ApiErrorResponses([])
  get(@CurrentProject() project: CurrentProjectInfo): Promise<ProjectHealthResponse> {
    return this.health.get(project.id);
  }

  @Post('resume')
  @HttpCode(200)
  @ApiOp(
    'project_resumeSending',
    'Set sender health back to HEALTHY after a pause (paused campaigns stay PAUSED)',
  )
  @ApiSuccess(200, ProjectHealthResponse)
  @ApiErrorResponses([])
  resume(@CurrentProject() project: CurrentProjectInfo): Promise<ProjectHealthResponse> {
    return this.health.resume(project.id);
  }
}
