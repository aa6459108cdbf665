import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AllowPublicKey, CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { TrackEventDto, TrackResultView } from './dto/track.dto';
import { TrackService } from './track.service';

@ApiTags('events')
@Controller('v1')
export class TrackController {
  constructor(private readonly tracking: TrackService) {}

  @Post('track')
  @HttpCode(200)
  @AllowPublicKey()
  @ApiOperation({
    summary: 'Record an event for a contact, creating or updating the contact (sk_ or pk_ key)',
  })
  track(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: TrackEventDto,
  ): Promise<TrackResultView> {
    return this.tracking.track(project.id, dto);
  }
}
