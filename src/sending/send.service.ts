import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { detectMimeType } from 'nodemailer/lib/mime-funcs';
import { ApiException, FieldError } from '../common/errors/api-exception';
import type { ContactRow } from '../contacts/contact.row';
import { ContactsService } from '../contacts/contacts.service';
import { newId } from '../database/id';
import { retryOnDeadlock } from '../database/retry-on-deadlock';
import { DomainsService } from '../domains/domains.service';
import { EventsService } from '../events/events.service';
import { ProjectsService } from '../projects/projects.service';
import type { NewEvent } from '../events/events.repository';
import { TemplateType } from '../templates/template.entity';
import { TemplateRenderError } from '../templates/template-renderer';
import { renderFailure, TemplatesService } from '../templates/templates.service';
import { MailboxDto, MAX_ATTACHMENT_BYTES, SendEmailDto } from './dto/send-email.dto';
import { SendResponse } from './dto/send.response';
import { EmailAttachment } from './email-attachment.entity';
import { Email, EmailAttachmentRef, EmailSource } from './email.entity';
import { EmailContentsRepository } from './email-contents.repository';
import { IdempotencyKeysRepository } from './idempotency-keys.repository';
import { EmailsService } from './emails.service';
import { IdempotencyRequest, idempotencyKeyReused } from './idempotency';
import { validateMailHeaders } from './mail-headers';

interface ResolvedSend {
  from: { email: string; name: string | null };
  replyTo: string | null;
  subject: string;
  body: string;
  templateId: string | null;
  marketing: boolean;
  /** `track: true` on the send or the template (marketing mail is tracked anyway). */
  track: boolean;
  headers: Record<string, string>;
  recipients: MailboxDto[];
}

/** POST /v1/send: validation beyond the DTO, the sender check, and one transaction for every recipient. */
@Injectable()
export class SendService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly contents: EmailContentsRepository,
    private readonly idempotencyKeys: IdempotencyKeysRepository,
    private readonly emails: EmailsService,
    private readonly templates: TemplatesService,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
    private readonly domains: DomainsService,
    private readonly projects: ProjectsService,
  ) {}

  async send(
    projectId: string,
    dto: SendEmailDto,
    idempotency: IdempotencyRequest | null,
  ): Promise<SendResponse> {
    const resolved = await this.resolve(projectId, dto);
    const attachments = decodeAttachments(dto);
    await this.domains.assertCanSend(projectId, resolved.from.email);

    // Recipients are locked in email order, but an import chunk (two ordered passes) can still
    // close a lock cycle with a send; the transaction is then rolled back and run again.
    const { response, emails, published } = await retryOnDeadlock(() =>
      this.dataSource.transaction(async (manager) => {
        const idempotencyRowId = newId();
        if (idempotency) {
          const stored = await this.idempotencyKeys.claimIdempotencyKey(
            manager,
            projectId,
            idempotency.key,
            idempotency.requestHash,
            idempotencyRowId,
          );
          if (stored) {
            if (stored.requestHash !== idempotency.requestHash) throw idempotencyKeyReused();
            return {
              response: sendResponse(stored.responseBody as SendResponse),
              emails: [] as Email[],
              published: [],
            };
          }
        }

        const refs: EmailAttachmentRef[] = attachments.map((a) => ({
          id: newId(),
          filename: a.filename,
          contentType: a.contentType,
          size: a.content.length,
        }));
        await this.contents.insertAttachments(
          manager,
          attachments.map((a, i): Partial<EmailAttachment> => ({
            id: refs[i].id,
            projectId,
            filename: a.filename,
            contentType: a.contentType,
            content: a.content,
            pending: resolved.recipients.length,
          })),
        );

        // Contacts are locked in email order (code units, as COLLATE "C"), the order of the other
        // multi-contact writers (track batches, each import pass), so sends cannot deadlock with
        // one another or with track batches.
        const contactsByEmail = new Map<string, ContactRow>();
        const subscriptionEvents: NewEvent[] = [];
        for (const email of resolved.recipients.map((r) => r.email).sort()) {
          const { contact, subscriptionChanged } = await this.contacts.upsertByEmail(
            manager,
            projectId,
            email,
            {
              subscribed: dto.subscribed,
              defaultSubscribed: false,
              data: dto.data,
            },
          );
          contactsByEmail.set(email, contact);
          if (subscriptionChanged) {
            subscriptionEvents.push({
              projectId,
              contactId: contact.id,
              name: this.contacts.subscriptionEventName(contact.subscribed),
              data: { source: 'send' },
            });
          }
        }
        const composed: Email[] = [];
        for (const recipient of resolved.recipients) {
          const contact = contactsByEmail.get(recipient.email) as ContactRow;
          composed.push(
            await this.emails.compose({
              projectId,
              contact,
              toName: recipient.name ?? null,
              source: EmailSource.TRANSACTIONAL,
              marketing: resolved.marketing,
              track: resolved.track,
              templateId: resolved.templateId,
              from: resolved.from,
              replyTo: resolved.replyTo,
              content: {
                subject: resolved.subject,
                body: resolved.body,
                format: dto.type ?? 'html',
              },
              data: dto.data ?? null,
              headers: resolved.headers,
              attachments: refs,
            }),
          );
        }
        const subscriptions = await this.events.recordMany(manager, subscriptionEvents);
        const queued = await this.emails.insert(manager, composed);
        const result = sendResponse({
          contact: composed[0].contactId,
          event: queued[0].id,
          timestamp: new Date().toISOString(),
          emails: composed.map((e) => ({
            id: e.id,
            to: e.toEmail,
            contact: e.contactId,
            status: e.status,
          })),
        });
        if (idempotency)
          await this.idempotencyKeys.storeIdempotentResponse(
            manager,
            idempotencyRowId,
            200,
            result,
          );
        const emailOf = new Map(composed.map((e) => [e.contactId, e.toEmail]));
        return {
          response: result,
          emails: composed,
          // After commit, listeners (workflow triggers) hear the subscription changes and each email.queued.
          published: [...subscriptions, ...queued].map((event) => ({
            ...event,
            email: emailOf.get(event.contactId as string) as string,
          })),
        };
      }),
    ).catch((error: unknown) => {
      throw error instanceof TemplateRenderError ? renderFailure(error) : error;
    });

    await this.emails.enqueue(emails);
    await this.events.publish(published);
    return response;
  }

  /** Template defaults, request overrides, the 422s the DTO cannot express. */
  private async resolve(projectId: string, dto: SendEmailDto): Promise<ResolvedSend> {
    const errors: FieldError[] = [];
    const template = dto.template ? await this.templates.findOrFail(projectId, dto.template) : null;
    const subject = dto.subject ?? template?.subject;
    const body = dto.body ?? template?.body;
    if (!template) {
      if (subject === undefined)
        errors.push({
          field: 'subject',
          message: 'subject is required without template',
          code: 'required',
        });
      if (body === undefined)
        errors.push({
          field: 'body',
          message: 'body is required without template',
          code: 'required',
        });
    }
    // The project's default sender only when neither the request nor the template names one.
    const fallback =
      dto.from?.email || template?.fromEmail ? null : await this.projects.defaultSender(projectId);
    const fromEmail = dto.from?.email ?? template?.fromEmail ?? fallback?.email ?? null;
    if (!fromEmail) {
      errors.push({
        field: 'from',
        message:
          'from is required when neither the template nor the project (PATCH /project {defaultFrom}) names a sender',
        code: 'required',
      });
    }
    const headers = validateMailHeaders(dto.headers);
    errors.push(...headers.errors);
    errors.push(...attachmentSizeErrors(dto));
    if (errors.length > 0) throw ApiException.validation(errors);

    // Case-insensitive duplicates are one recipient: the first spelling and name win.
    const seen = new Set<string>();
    const recipients = dto.to.filter((r) => !seen.has(r.email) && seen.add(r.email));
    return {
      from: {
        email: fromEmail as string,
        name: dto.from?.name ?? dto.name ?? template?.fromName ?? fallback?.name ?? null,
      },
      replyTo: dto.replyTo ?? dto.reply ?? template?.replyTo ?? null,
      subject: subject as string,
      body: body as string,
      templateId: template?.id ?? null,
      marketing: template?.type === TemplateType.MARKETING,
      track: dto.track === true || template?.track === true,
      headers: headers.headers,
      recipients,
    };
  }
}

/**
 * The response in the one key order clients see. A replay reads it back from
 * jsonb, which reorders keys; rebuilding keeps the replay byte-identical.
 */
function sendResponse(r: SendResponse): SendResponse {
  return {
    contact: r.contact,
    event: r.event,
    timestamp: r.timestamp,
    emails: r.emails.map((e) => ({ id: e.id, to: e.to, contact: e.contact, status: e.status })),
  };
}

function attachmentSizeErrors(dto: SendEmailDto): FieldError[] {
  const total = (dto.attachments ?? []).reduce((sum, a) => sum + base64DecodedLength(a.content), 0);
  return total > MAX_ATTACHMENT_BYTES
    ? [{ field: 'attachments', message: 'attachments may total at most 10 MB', code: 'too_big' }]
    : [];
}

function base64DecodedLength(b64: string): number {
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return Math.floor((b64.length * 3) / 4) - padding;
}

function decodeAttachments(
  dto: SendEmailDto,
): Array<{ filename: string; contentType: string; content: Buffer }> {
  return (dto.attachments ?? []).map((a) => ({
    filename: a.filename,
    contentType: a.contentType ?? detectMimeType(a.filename.split('.').pop() ?? false),
    content: Buffer.from(a.content, 'base64'),
  }));
}
