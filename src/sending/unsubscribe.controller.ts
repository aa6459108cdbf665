import { Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { NoApiKey } from '../common/auth/auth.decorators';
import { ApiException } from '../common/errors/api-exception';
import { RawResponse } from '../common/http/envelope';
import { ApiErrorResponses, ApiNoKey, ApiOp } from '../common/openapi/decorators';
import { UnsubscribeService } from './unsubscribe.service';

/** Pages for people, not API clients: HTML, no key, links signed with APP_SECRET. */
@ApiTags('unsubscribe')
@NoApiKey()
@ApiNoKey()
@ApiErrorResponses([500])
@RawResponse()
@Controller('unsubscribe')
export class UnsubscribeController {
  constructor(private readonly unsubscribes: UnsubscribeService) {}

  /** Confirmation page; a GET never changes anything (link scanners follow GETs). */
  @Get(':token')
  @ApiOp('unsubscribe_page', 'The confirmation page of an unsubscribe link (HTML; changes nothing)')
  @ApiParam({ name: 'token', description: 'The signed token of the link in the email' })
  @ApiResponse({
    status: 200,
    description: 'The page',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  @ApiResponse({
    status: 404,
    description: 'A forged or altered token: a page saying the link is not valid',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  async confirm(
    @Param('token') token: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    return page(
      reply,
      () => this.unsubscribes.describe(token),
      (c) =>
        c.subscribed
          ? `<h1>Unsubscribe</h1><p>Stop receiving marketing email at <b>${escapeHtml(c.email)}</b>?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`
          : `<h1>Unsubscribed</h1><p><b>${escapeHtml(c.email)}</b> does not receive marketing email.</p>`,
    );
  }

  /** RFC 8058 one-click (`List-Unsubscribe=One-Click` form body) and the page's button. */
  @Post(':token')
  @HttpCode(200)
  @ApiOp(
    'unsubscribe_confirm',
    'Unsubscribe: RFC 8058 one-click (List-Unsubscribe=One-Click) and the page button (HTML)',
  )
  @ApiParam({ name: 'token', description: 'The signed token of the link in the email' })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({
    required: false,
    schema: {
      type: 'object',
      properties: { 'List-Unsubscribe': { type: 'string', enum: ['One-Click'] } },
    },
  })
  @ApiResponse({
    status: 200,
    description: 'Unsubscribed (also when already unsubscribed)',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  @ApiResponse({
    status: 404,
    description: 'A forged or altered token: nothing changes',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  async unsubscribe(
    @Param('token') token: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    return page(
      reply,
      () => this.unsubscribes.unsubscribe(token),
      (c) =>
        `<h1>Unsubscribed</h1><p><b>${escapeHtml(c.email)}</b> will not receive marketing email any more.</p>`,
    );
  }
}

async function page<T>(
  reply: FastifyReply,
  load: () => Promise<T>,
  body: (value: T) => string,
): Promise<string> {
  reply.header('content-type', 'text/html; charset=utf-8');
  reply.header('cache-control', 'no-store');
  reply.header('x-robots-tag', 'noindex');
  try {
    return layout(body(await load()));
  } catch (error) {
    if (!(error instanceof ApiException) || error.getStatus() !== 404) throw error;
    reply.status(404);
    return layout(
      '<h1>Link not valid</h1><p>This unsubscribe link is not valid. Use the link exactly as it appears in the email.</p>',
    );
  }
}

function layout(content: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Email preferences</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}button{font-size:1rem;padding:.5rem 1rem}</style></head><body>${content}</body></html>`;
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
