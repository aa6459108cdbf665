import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { AllowPublicKey, CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { SubscribeDto } from './dto/subscribe.dto';
import { SubscribeResponse } from './dto/subscribe.response';
import { OptInService } from './opt-in.service';

@ApiTags('contacts')
@ApiKeyProtected()
@Controller('v1')
export class SubscribeController {
  constructor(private readonly optIn: OptInService) {}

  @Post('subscribe')
  @HttpCode(200)
  @AllowPublicKey()
  @ApiOp(
    'contacts_subscribe',
    'Subscribe an address, by double opt-in when the project has it on (sk_ or pk_ key)',
    'Takes a public pk_ key as well as a secret sk_ key, so a signup form can call it from a browser (CORS allows any origin). ' +
      'With doubleOptIn enabled the contact is created or updated unsubscribed and one confirmation email is sent (none more for 10 minutes); ' +
      'GET /confirm/{token} subscribes it. Without it, an sk_ key subscribes at once, and a pk_ key subscribes a new or subscribed contact at once ' +
      'but sends a contact who unsubscribed or is suppressed a confirmation instead (a public key never resubscribes anyone).',
  )
  @ApiSuccess(200, SubscribeResponse)
  @ApiErrorResponses([400, 403, 413, 422], {
    403: 'PROJECT_DISABLED (both key types are accepted here)',
  })
  subscribe(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: SubscribeDto,
  ): Promise<SubscribeResponse> {
    return this.optIn.subscribe(project.id, dto, project.publicKey);
  }
}
