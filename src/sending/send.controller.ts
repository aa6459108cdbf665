import { Body, Controller, Headers, HttpCode, Post, Req } from '@nestjs/common';
import { ApiHeader, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { SendEmailDto } from './dto/send-email.dto';
import { SendResponse } from './dto/send.response';
import { parseIdempotencyKey, requestHash } from './idempotency';
import { SendService } from './send.service';

@ApiTags('send')
@ApiKeyProtected()
@Controller('v1/send')
export class SendController {
  constructor(private readonly sending: SendService) {}

  @Post()
  @HttpCode(200)
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: '1..255 printable ASCII; kept 24 h',
  })
  @ApiOp(
    'emails_send',
    'Send a transactional email to 1..50 recipients (Plunk-compatible fields)',
    'One email record and one queue job per recipient; answers 200 once they are queued. With Idempotency-Key, the same key and body replay the first response.',
  )
  @ApiSuccess(
    200,
    SendResponse,
    'Queued (or SUPPRESSED for addresses that bounced or complained before)',
  )
  @ApiErrorResponses([400, 403, 404, 409, 413, 422], {
    400: 'BAD_REQUEST: malformed JSON, unsupported content type, or a malformed Idempotency-Key header',
    403: 'DOMAIN_NOT_VERIFIED (the sender domain is not a verified domain of the project while REQUIRE_VERIFIED_SENDER holds), PROJECT_DISABLED, or FORBIDDEN (a pk_ key)',
    404: 'TEMPLATE_NOT_FOUND: the template id is not a template of this project',
    409: 'IDEMPOTENCY_KEY_REUSED: the same Idempotency-Key with a different body',
  })
  send(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: SendEmailDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Req() request: FastifyRequest,
  ): Promise<SendResponse> {
    const key = parseIdempotencyKey(idempotencyKey);
    // The hash is of the body as sent, before validation transforms it.
    return this.sending.send(
      project.id,
      dto,
      key ? { key, requestHash: requestHash(request.body) } : null,
    );
  }
}
