import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { AllowPublicKey, CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { TrackEventDto } from './dto/track-event.dto';
import { TrackResponse } from './dto/track.response';
import { TrackService } from './track.service';

@ApiTags('events')
@ApiKeyProtected()
@Controller('v1')
export class TrackController {
  constructor(private readonly tracking: TrackService) {}

  @Post('track')
  @HttpCode(200)
  @AllowPublicKey()
  @ApiOp(
    'events_track',
    'Record an event for a contact, creating or updating the contact (sk_ or pk_ key)',
    'Takes a public pk_ key as well as a secret sk_ key, so it can be called from a browser (CORS allows any origin).',
  )
  @ApiSuccess(200, TrackResponse)
  @ApiErrorResponses([400, 403, 413, 422], {
    403: 'PROJECT_DISABLED (both key types are accepted here)',
  })
  track(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: TrackEventDto,
  ): Promise<TrackResponse> {
    return this.tracking.track(project.id, dto, project.publicKey);
  }
}
