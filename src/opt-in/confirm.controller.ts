import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { NoApiKey } from '../common/auth/auth.decorators';
import { ApiException } from '../common/errors/api-exception';
import { RawResponse } from '../common/http/envelope';
import { ApiErrorResponses, ApiNoKey, ApiOp } from '../common/openapi/decorators';
import { OptInService } from './opt-in.service';

/** The page a confirmation email links to: HTML for people, no key, links signed with APP_SECRET. */
@ApiTags('contacts')
@NoApiKey()
@ApiNoKey()
@ApiErrorResponses([500])
@RawResponse()
@Controller('confirm')
export class ConfirmController {
  constructor(private readonly optIn: OptInService) {}

  @Get(':token')
  @ApiOp(
    'contacts_confirm',
    'Confirm a subscription (double opt-in): the link of the confirmation email (HTML or 302)',
    'The first use subscribes the contact and records contact.confirmed then contact.subscribed; later uses show the same page and record nothing. Links last 30 days.',
  )
  @ApiParam({ name: 'token', description: 'The signed token of the link in the email' })
  // One documented success per operation: the redirect, a project setting, is described with the page.
  @ApiResponse({
    status: 200,
    description:
      'The confirmation page; when the project sets doubleOptIn.confirmRedirectUrl, a 302 to that URL instead (no body)',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  @ApiResponse({
    status: 404,
    description: 'A forged, altered or expired token: a page saying the link is not valid',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  async confirm(
    @Param('token') token: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    reply.header('cache-control', 'no-store');
    reply.header('x-robots-tag', 'noindex');
    reply.header('content-type', 'text/html; charset=utf-8');
    try {
      const page = await this.optIn.confirm(token);
      if (page.redirectUrl) {
        // Serialised by URL: a punycode host and a percent-encoded path (a header holds Latin-1 only).
        reply.status(302).header('location', new URL(page.redirectUrl).href);
        return '';
      }
      return layout(
        `<h1>Subscription confirmed</h1><p><b>${escapeHtml(page.email)}</b> is subscribed to email from ${escapeHtml(page.projectName)}.</p>`,
      );
    } catch (error) {
      if (!(error instanceof ApiException) || error.getStatus() !== 404) throw error;
      reply.status(404);
      return layout(
        '<h1>Link not valid</h1><p>This confirmation link is not valid or has expired. Subscribe again to get a new one.</p>',
      );
    }
  }
}

function layout(content: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Subscription</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}</style></head><body>${content}</body></html>`;
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
