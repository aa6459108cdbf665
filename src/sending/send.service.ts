import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { detectMimeType } from 'nodemailer/lib/mime-funcs';
import { ApiException, FieldError } from '../common/errors/api-exception';
import type { ContactRow } from '../contacts/contact.row';
import { ContactsService, UpsertContactOptions } from '../contacts/contacts.service';
import { newId } from '../database/id';
import { retryOnDeadlock } from '../database/retry-on-deadlock';
import { DomainsService } from '../domains/domains.service';
import { EventsService } from '../events/events.service';
import { ProjectsService } from '../projects/projects.service';
import type { RecordedEvent } from '../events/event-hooks';
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
import { EmailsService, RenderedEmail } from './emails.service';
import { IdempotencyRequest, idempotencyKeyReused } from './idempotency';
import { MAX_RENDER_ATTEMPTS, RecipientsChanged, rendersAlike } from './rendered-recipients';
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

interface DecodedAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
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
    if (resolved.marketing) await this.projects.assertMarketingAllowed(projectId);
    if (idempotency) {
      // A replay is answered before anything is rendered; the claim in the transaction settles races.
      const answered = await this.idempotencyKeys.findAnsweredIdempotencyKey(
        this.dataSource.manager,
        projectId,
        idempotency.key,
      );
      if (answered) {
        if (answered.requestHash !== idempotency.requestHash) throw idempotencyKeyReused();
        return sendResponse(answered.responseBody as SendResponse);
      }
    }

    const refs: EmailAttachmentRef[] = attachments.map((a) => ({
      id: newId(),
      filename: a.filename,
      contentType: a.contentType,
      size: a.content.length,
    }));
    const upsertOptions: UpsertContactOptions = {
      subscribed: dto.subscribed,
      defaultSubscribed: false,
      data: dto.data,
    };
    // Messages are rendered before the transaction, for each contact as the send will leave it,
    // so no connection or row lock is held while the render pool works. The transaction checks
    // the rows it locks against those; one changed in between is rendered again.
    let expected = await this.contacts.expectedUpserts(
      this.dataSource.manager,
      projectId,
      resolved.recipients.map((r) => r.email),
      upsertOptions,
    );
    for (let attempt = 1; ; attempt++) {
      const rendered = await this.render(projectId, dto, resolved, expected, refs);
      try {
        const { response, emails, published } = await this.write(
          projectId,
          resolved,
          attachments,
          refs,
          upsertOptions,
          idempotency,
          expected,
          rendered,
        );
        await this.emails.enqueue(emails);
        await this.events.publish(published);
        return response;
      } catch (error) {
        if (!(error instanceof RecipientsChanged)) throw error;
        if (attempt >= MAX_RENDER_ATTEMPTS) {
          throw ApiException.conflict(
            'The recipients changed while their messages were rendered',
            'Retry the request with the same Idempotency-Key.',
          );
        }
        expected = error.locked;
      }
    }
  }

  /** Every recipient's message, rendered for the contact as `expected`; 422 invalid_template on a render failure. */
  private async render(
    projectId: string,
    dto: SendEmailDto,
    resolved: ResolvedSend,
    expected: Map<string, ContactRow>,
    refs: EmailAttachmentRef[],
  ): Promise<RenderedEmail[]> {
    try {
      return await Promise.all(
        resolved.recipients.map((recipient) =>
          this.emails.render({
            projectId,
            contact: expected.get(recipient.email) as ContactRow,
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
        ),
      );
    } catch (error) {
      throw error instanceof TemplateRenderError ? renderFailure(error) : error;
    }
  }

  /**
   * One transaction for every recipient: the key's claim, attachments, contacts, emails and
   * their events. Throws RecipientsChanged (rolled back) when a locked contact is not the one
   * its message was rendered for.
   */
  private write(
    projectId: string,
    resolved: ResolvedSend,
    attachments: DecodedAttachment[],
    refs: EmailAttachmentRef[],
    upsertOptions: UpsertContactOptions,
    idempotency: IdempotencyRequest | null,
    expected: Map<string, ContactRow>,
    rendered: RenderedEmail[],
  ): Promise<{ response: SendResponse; emails: Email[]; published: RecordedEvent[] }> {
    // Recipients are locked in email order, but an import chunk (two ordered passes) can still
    // close a lock cycle with a send; the transaction is then rolled back and run again.
    return retryOnDeadlock(() =>
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
            { ...upsertOptions, idIfNew: expected.get(email)?.id },
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
        for (const [email, contact] of contactsByEmail) {
          if (!rendersAlike(contact, expected.get(email)))
            throw new RecipientsChanged(contactsByEmail);
        }
        const composed = rendered.map((message, i) =>
          this.emails.toRow(
            message,
            contactsByEmail.get(resolved.recipients[i].email) as ContactRow,
          ),
        );
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
    );
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

function decodeAttachments(dto: SendEmailDto): DecodedAttachment[] {
  return (dto.attachments ?? []).map((a) => ({
    filename: a.filename,
    contentType: a.contentType ?? detectMimeType(a.filename.split('.').pop() ?? false),
    content: Buffer.from(a.content, 'base64'),
  }));
}
