import { Body, Controller, Delete, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AuthenticatedRequest, NoApiKey } from '../common/auth/auth.decorators';
import {
  ApiErrorResponses,
  ApiKeyProtected,
  ApiNoKey,
  ApiOp,
  ApiSuccess,
} from '../common/openapi/decorators';
import { CreateSessionDto } from './dto/create-session.dto';
import { SessionEndedResponse, SessionResponse } from './dto/session.response';
import { SessionService } from './session.service';

const SESSION_ERRORS = {
  400: 'BAD_REQUEST: the request was made with an API key (Authorization header), not the session cookie',
  401: 'MISSING_API_KEY (no session cookie) or INVALID_API_KEY (the session has ended, idle for 12 hours, signed out, or its key revoked)',
  403: 'PROJECT_DISABLED, or FORBIDDEN (DELETE without the X-CSRF-Token header of the session)',
};

/** The dashboard's sign-in (docs/dashboard.md): a secret key exchanged for an HttpOnly session cookie. */
@ApiTags('session')
@Controller('session')
export class SessionController {
  constructor(private readonly sessions: SessionService) {}

  @Post()
  @HttpCode(200)
  @NoApiKey()
  @ApiNoKey()
  @ApiOp(
    'session_create',
    'Sign in to the dashboard: a secret key for a session cookie',
    'Sets the `mw_session` cookie (HttpOnly, SameSite=Strict, Path=/, Secure when PUBLIC_URL is https). ' +
      'Without an Authorization header, a request with the cookie acts as this secret key on every endpoint; ' +
      'POST, PUT, PATCH and DELETE made with it must carry `X-CSRF-Token`. A pk_ or unknown key is 401.',
  )
  @ApiSuccess(200, SessionResponse, 'Signed in; the session cookie is set')
  @ApiErrorResponses([400, 401, 403, 413, 422, 429, 500, 503], {
    401: 'INVALID_API_KEY: unknown or revoked key, or a public pk_ key',
    403: 'PROJECT_DISABLED',
  })
  async create(
    @Body() body: CreateSessionDto,
    @Req() request: AuthenticatedRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionResponse> {
    const signedIn = await this.sessions.signIn(body.key, request.ip);
    void reply.header('set-cookie', signedIn.cookie).header('cache-control', 'no-store');
    return signedIn.session;
  }

  @Get()
  @ApiKeyProtected()
  @ApiOp(
    'session_get',
    'The signed-in project and the CSRF token of the session cookie',
    'Slides the idle expiry like any request made with the session.',
  )
  @ApiSuccess(200, SessionResponse)
  @ApiErrorResponses([400, 401, 403], SESSION_ERRORS)
  get(
    @Req() request: AuthenticatedRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): SessionResponse {
    void reply.header('cache-control', 'no-store');
    return this.sessions.describe(authOf(request));
  }

  @Delete()
  @ApiKeyProtected()
  @ApiOp('session_delete', 'Sign out: ends the session on the server and removes its cookie')
  @ApiSuccess(200, SessionEndedResponse)
  @ApiErrorResponses([400, 401, 403], SESSION_ERRORS)
  async remove(
    @Req() request: AuthenticatedRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<SessionEndedResponse> {
    void reply.header('set-cookie', await this.sessions.signOut(authOf(request)));
    return { signedOut: true };
  }
}

function authOf(request: AuthenticatedRequest): NonNullable<AuthenticatedRequest['auth']> {
  if (!request.auth) throw new Error('session route reached without the API-key guard');
  return request.auth;
}
