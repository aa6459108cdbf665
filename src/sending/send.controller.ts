import { Body, Controller, Headers, HttpCode, Post, Req } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { CurrentProject, CurrentProjectInfo } from '../common/auth/auth.decorators';
import { SendEmailDto, SendResponse } from './dto/send-email.dto';
import { parseIdempotencyKey, requestHash } from './idempotency';
import { SendService } from './send.service';

@ApiTags('send')
@Controller('v1/send')
export class SendController {
  constructor(private readonly sending: SendService) {}

  @Post()
  @HttpCode(200)
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: '1..255 printable ASCII; kept 24 h' })
  @ApiOkResponse({ type: SendResponse })
  send(
    @CurrentProject() project: CurrentProjectInfo,
    @Body() dto: SendEmailDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Req() request: FastifyRequest,
  ): Promise<SendResponse> {
    const key = parseIdempotencyKey(idempotencyKey);
    // The hash is of the body as sent, before validation transforms it.
    return this.sending.send(project.id, dto, key ? { key, requestHash: requestHash(request.body) } : null);
  }
}
