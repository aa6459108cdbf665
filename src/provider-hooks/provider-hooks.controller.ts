import { Body, Controller, Param, Put } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { ConfigureProviderDto, ProviderParamDto } from './dto/configure-provider.dto';
import { ProviderHookResponse } from './dto/provider-hook.response';
import { ProviderHooksService } from './provider-hooks.service';

@ApiTags('bounces')
@ApiKeyProtected()
@Controller('project/inbound')
export class ProviderHooksController {
  constructor(private readonly hooks: ProviderHooksService) {}

  @Put(':provider')
  @ApiOp(
    'project_configureInbound',
    "Store a relay provider's webhook credentials and get the URL to paste into its console",
    'Body per provider: ses `{}` (SNS signatures are checked against their certificate), postmark `{username, password}`, mailgun `{secret}`, sendgrid `{publicKey}`, resend `{secret}`. Calling it again replaces the credentials and keeps the URL. The credentials are stored sealed and never answered.',
  )
  @ApiSuccess(200, ProviderHookResponse)
  @ApiErrorResponses([400, 413, 422], {
    400: 'BAD_REQUEST: an unknown provider (error.errors names `provider`) or malformed JSON',
    422: 'VALIDATION_ERROR: a credential the provider needs is missing or malformed, or one it does not use is given',
  })
  configure(
    @CurrentProject() project: CurrentProjectInfo,
    @Param() params: ProviderParamDto,
    @Body() body: ConfigureProviderDto,
  ): Promise<ProviderHookResponse> {
    return this.hooks.configure(project.id, params.provider, body);
  }
}
