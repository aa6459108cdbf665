import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { BouncePolicy, type BounceOutcome } from '../bounces/bounce-policy';
import { ApiException, type FieldError } from '../common/errors/api-exception';
import { normalizeEmail } from '../common/validation/email';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { EmailsRepository } from '../sending/emails.repository';
import { ReturnPaths } from '../sending/return-paths';
import type { ConfigureProviderDto } from './dto/configure-provider.dto';
import type { ProviderHookResponse } from './dto/provider-hook.response';
import {
  mailgunEvents,
  postmarkEvents,
  type ProviderEvent,
  resendEvents,
  sendgridEvents,
  sesEvents,
} from './provider-events';
import { PROVIDERS, type Provider } from './provider-hook.entity';
import { type Credentials, ProviderCredentials } from './provider-credentials';
import { ProviderHooksRepository } from './provider-hooks.repository';
import {
  type Headers,
  isStandardWebhooksSecret,
  parseSendgridKey,
  verifyBasicAuth,
  verifyMailgun,
  verifySendgrid,
  verifyStandardWebhook,
} from './provider-signatures';
import { type SnsMessage, SnsVerifier } from './sns-verifier';

/** The fields each provider's credentials have (contract: "Provider webhooks"). */
const FIELDS: Record<Provider, ReadonlyArray<keyof ConfigureProviderDto>> = {
  ses: [],
  postmark: ['username', 'password'],
  mailgun: ['secret'],
  sendgrid: ['publicKey'],
  resend: ['secret'],
};

/** What one POST did with the reports it carried (bounce, complaint and delay events only). */
export interface InboundOutcome {
  received: number;
  applied: number;
  duplicate: number;
  unmatched: number;
  ignored: number;
}

/** A report that names only its recipient is matched to an email sent at most this long before it. */
const RECIPIENT_WINDOW_DAYS = 30;
/** Our Message-ID is `<email id>@<sender domain>` (delivery). */
const OUR_MESSAGE_ID = /^<?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})@/i;

function unauthorized(): ApiException {
  return new ApiException(
    401,
    'INVALID_SIGNATURE',
    "The request's signature or credentials do not verify for this webhook URL",
    {
      suggestion:
        "Use the URL answered by PUT /project/inbound/{provider} and the same credentials in the provider's console; after changing them, PUT them again.",
    },
  );
}

function malformed(): ApiException {
  return ApiException.badRequest('Malformed request: the body is not the JSON the provider sends');
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    throw malformed();
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Provider webhooks: PUT /project/inbound/{provider} stores a provider's
 * credentials (sealed) and answers the URL to paste into its console;
 * POST /inbound/{provider}/{inboundId} verifies what arrives there, parses
 * it into provider events, finds the email of that project each is about
 * and hands each to the one bounce policy.
 */
@Injectable()
export class ProviderHooksService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly credentials: ProviderCredentials,
    private readonly hooks: ProviderHooksRepository,
    private readonly emails: EmailsRepository,
    private readonly policy: BouncePolicy,
    private readonly sns: SnsVerifier,
    private readonly returnPaths: ReturnPaths,
  ) {}

  async configure(
    projectId: string,
    provider: Provider,
    dto: ConfigureProviderDto | undefined,
  ): Promise<ProviderHookResponse> {
    const credentials = this.credentialsOf(provider, dto ?? {});
    const sealed =
      FIELDS[provider].length === 0
        ? null
        : this.credentials.seal(projectId, provider, credentials);
    const { inboundId } = await this.hooks.upsert(
      this.dataSource.manager,
      projectId,
      provider,
      randomBytes(24).toString('base64url'),
      sealed,
    );
    return { provider, url: `${this.config.publicUrl}/inbound/${provider}/${inboundId}` };
  }

  async receive(
    providerParam: string,
    inboundId: string,
    headers: Headers,
    body: Buffer,
  ): Promise<InboundOutcome> {
    if (!(PROVIDERS as readonly string[]).includes(providerParam)) {
      throw ApiException.badRequest('Invalid path parameter', [
        {
          field: 'provider',
          message: `provider must be one of ${PROVIDERS.join(', ')}`,
          code: 'invalid_enum_value',
        },
      ]);
    }
    const provider = providerParam as Provider;
    const hook =
      inboundId.length <= 64
        ? await this.hooks.findInbound(this.dataSource.manager, provider, inboundId)
        : null;
    if (!hook) throw unauthorized();
    const credentials: Credentials = hook.credentialsSealed
      ? this.credentials.open(hook.projectId, provider, hook.credentialsSealed)
      : {};
    const events = await this.verifiedEvents(provider, credentials, headers, body);
    // Only a verified caller learns that the project is disabled.
    if (!hook.projectEnabled) {
      throw new ApiException(403, 'PROJECT_DISABLED', 'The project of this webhook is disabled', {
        suggestion:
          'The provider retries later; an operator can enable the project with "projects enable <id>".',
      });
    }
    const outcome: InboundOutcome = {
      received: events.length,
      applied: 0,
      duplicate: 0,
      unmatched: 0,
      ignored: 0,
    };
    for (const event of events) {
      const result: BounceOutcome = await this.policy.apply({
        kind: event.kind,
        source: provider,
        emailId: await this.emailOf(hook.projectId, event),
        recipient: event.recipient ? normalizeEmail(event.recipient) : null,
        status: event.status,
        diagnostic: event.diagnostic,
        feedbackType: event.feedbackType,
        dedupeKey: [
          provider,
          hook.projectId,
          event.eventId,
          event.recipient ? normalizeEmail(event.recipient) : '',
          event.kind,
        ].join(':'),
        projectId: hook.projectId,
      });
      outcome[result]++;
    }
    return outcome;
  }

  /** The request's events once its signature verifies; 401 when it does not. */
  private async verifiedEvents(
    provider: Provider,
    credentials: Credentials,
    headers: Headers,
    body: Buffer,
  ): Promise<ProviderEvent[]> {
    switch (provider) {
      case 'ses':
        return this.snsEvents(parseJson(body));
      case 'postmark': {
        const { username = '', password = '' } = credentials;
        if (!verifyBasicAuth(headers, { username, password })) throw unauthorized();
        const payload = parseJson(body);
        return isObject(payload) ? postmarkEvents(payload) : [];
      }
      case 'mailgun': {
        const payload = parseJson(body);
        if (!isObject(payload)) throw unauthorized();
        const signature = isObject(payload.signature) ? payload.signature : undefined;
        if (!verifyMailgun(signature, credentials.secret ?? '')) throw unauthorized();
        return isObject(payload['event-data']) ? mailgunEvents(payload['event-data']) : [];
      }
      case 'sendgrid': {
        const key = parseSendgridKey(credentials.publicKey ?? '');
        if (!key || !verifySendgrid(headers, body, key)) throw unauthorized();
        const payload = parseJson(body);
        return sendgridEvents(Array.isArray(payload) ? payload : [payload]);
      }
      case 'resend': {
        const id = verifyStandardWebhook(headers, body, credentials.secret ?? '');
        if (!id) throw unauthorized();
        const payload = parseJson(body);
        return isObject(payload) ? resendEvents(payload, id) : [];
      }
    }
  }

  private async snsEvents(payload: unknown): Promise<ProviderEvent[]> {
    if (!isObject(payload) || typeof payload.Type !== 'string') throw unauthorized();
    const message = payload as unknown as SnsMessage;
    if (!(await this.sns.verify(message))) throw unauthorized();
    if (message.Type === 'SubscriptionConfirmation') {
      if (!this.sns.allowedUrl(message.SubscribeURL)) {
        throw ApiException.badRequest(
          'SubscribeURL is not on an SNS host (SES_SNS_HOST_PATTERN); the subscription was not confirmed',
        );
      }
      if (!(await this.sns.confirmSubscription(message))) {
        throw new ApiException(
          503,
          'SERVICE_UNAVAILABLE',
          'The subscription could not be confirmed',
          {
            suggestion:
              'SNS sends the confirmation again; check that SNS is reachable from the server.',
          },
        );
      }
      return [];
    }
    if (message.Type !== 'Notification') return [];
    let ses: unknown;
    try {
      ses = JSON.parse(message.Message);
    } catch {
      return [];
    }
    return isObject(ses) ? sesEvents(ses, message.MessageId) : [];
  }

  /**
   * The email an event is about: the one our return path or Message-ID
   * names (whichever project's it is: the policy applies it only to this
   * project's), else this project's latest email to the recipient sent
   * before the event.
   */
  private async emailOf(projectId: string, event: ProviderEvent): Promise<string | null> {
    const manager = this.dataSource.manager;
    const named = [
      event.returnPath ? this.returnPaths.tokens.verifyAddress(event.returnPath) : null,
      ...event.messageIds.map((id) => OUR_MESSAGE_ID.exec(id.trim())?.[1]?.toLowerCase() ?? null),
    ];
    for (const emailId of named) {
      if (emailId && (await this.emails.findForBounce(manager, emailId))) return emailId;
    }
    if (!event.recipient) return null;
    // A minute of slack for clocks; never later than now.
    const now = Date.now();
    const at = Math.min((event.occurredAt?.getTime() ?? now) + 60_000, now + 60_000);
    return this.emails.findLatestSentTo(
      manager,
      projectId,
      normalizeEmail(event.recipient),
      new Date(at),
      RECIPIENT_WINDOW_DAYS,
    );
  }

  private credentialsOf(provider: Provider, dto: ConfigureProviderDto): Credentials {
    const allowed = FIELDS[provider];
    const errors: FieldError[] = [];
    const credentials: Credentials = {};
    for (const field of ['secret', 'publicKey', 'username', 'password'] as const) {
      const value = dto[field];
      if (!allowed.includes(field)) {
        if (value !== undefined)
          errors.push({
            field,
            message: `${field} is not used by ${provider}`,
            code: 'unrecognized_keys',
          });
      } else if (value === undefined || value.trim() === '') {
        errors.push({ field, message: `${field} is required for ${provider}`, code: 'required' });
      } else {
        credentials[field] = field === 'password' ? value : value.trim();
      }
    }
    if (provider === 'postmark' && credentials.username?.includes(':'))
      errors.push({
        field: 'username',
        message: 'username cannot contain ":" (HTTP basic auth)',
        code: 'invalid_string',
      });
    if (
      provider === 'sendgrid' &&
      credentials.publicKey &&
      !parseSendgridKey(credentials.publicKey)
    )
      errors.push({
        field: 'publicKey',
        message:
          'publicKey must be an ECDSA P-256 public key (base64 DER, as SendGrid shows it, or PEM)',
        code: 'invalid_string',
      });
    if (
      provider === 'resend' &&
      credentials.secret &&
      !isStandardWebhooksSecret(credentials.secret)
    )
      errors.push({
        field: 'secret',
        message: 'secret must be a Standard Webhooks secret: whsec_ followed by base64',
        code: 'invalid_string',
      });
    if (errors.length > 0) throw ApiException.validation(errors);
    return credentials;
  }
}
