import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { BouncesService } from './bounces.service';
import { BounceResultResponse } from './dto/bounce-result.response';
import { CreateBounceDto } from './dto/create-bounce.dto';

@ApiTags('bounces')
@ApiKeyProtected()
@Controller('bounces')
export class BouncesController {
  constructor(private readonly bounces: BouncesService) {}

  @Post()
  @HttpCode(200)
  @ApiOp(
    'bounces_report',
    'Report a bounce or complaint (source api): the same policy as DSNs and feedback reports',
  )
  @ApiSuccess(200, BounceResultResponse)
  @ApiErrorResponses([400, 413, 422])
  report(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: CreateBounceDto,
  ): Promise<BounceResultResponse> {
    return this.bounces.report(project.id, dto);
  }
}
