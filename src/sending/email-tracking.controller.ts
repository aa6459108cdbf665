import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { NoApiKey } from '../common/auth/auth.decorators';
import { ApiException } from '../common/errors/api-exception';
import { RawResponse } from '../common/http/envelope';
import { ApiErrorResponses, ApiNoKey, ApiOp } from '../common/openapi/decorators';
import { EmailTrackingService } from './email-tracking.service';

/** The 43-byte transparent 1×1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
const NO_CACHE = 'no-store, no-cache, must-revalidate, max-age=0';

function trackingNotFound(): ApiException {
  return new ApiException(404, 'LINK_NOT_FOUND', 'This tracking link is not valid', {
    suggestion: 'Use the link exactly as it appears in the email.',
  });
}

/**
 * Open pixel and tracked links (no key). Both answer from the signed token
 * alone, before anything is written: the hit is recorded asynchronously
 * (EmailTrackingService), so they are served when the database is down.
 */
@ApiTags('tracking')
@NoApiKey()
@ApiNoKey()
@ApiErrorResponses([404, 500], { 404: 'A forged, altered or truncated token (LINK_NOT_FOUND): nothing is recorded' })
@RawResponse()
@Controller('t')
export class EmailTrackingController {
  constructor(private readonly tracking: EmailTrackingService) {}

  @Get('o/:token')
  @ApiOp('tracking_open', 'The open pixel of a tracked email (a 1x1 GIF; counts an open)')
  @ApiParam({ name: 'token', description: 'The signed token of the pixel in the email' })
  @ApiResponse({
    status: 200,
    description: 'A transparent 1x1 GIF (43 bytes), never cached',
    content: { 'image/gif': { schema: { type: 'string', format: 'binary' } } },
  })
  open(@Param('token') token: string, @Res() reply: FastifyReply): void {
    if (this.tracking.open(token) === null) throw trackingNotFound();
    void reply
      .code(200)
      .header('content-type', 'image/gif')
      .header('cache-control', NO_CACHE)
      .header('pragma', 'no-cache')
      .header('expires', '0')
      .send(PIXEL);
  }

  // A wildcard: a click token carries its URL (up to ~2.8 KB), past the router's 100-character parameter limit.
  @Get('c/*')
  @ApiOp('tracking_click', 'A tracked link: redirects to the link that was signed (counts a click)')
  @ApiParam({ name: 'token', description: 'The signed token of the link in the email (it carries the URL)', schema: { type: 'string' } })
  @ApiResponse({
    status: 302,
    description: 'Redirect to the original URL (Location); only URLs signed into a token are ever targets',
    headers: { Location: { required: true, schema: { type: 'string', format: 'uri' } } },
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  click(@Param('*') token: string, @Res() reply: FastifyReply): void {
    const target = this.tracking.click(token);
    if (target === null) throw trackingNotFound();
    void reply
      .code(302)
      .header('location', target.url)
      .header('cache-control', NO_CACHE)
      .header('content-type', 'text/plain; charset=utf-8')
      .header('referrer-policy', 'no-referrer')
      .send('');
  }
}
