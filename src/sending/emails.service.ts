import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Queue } from 'bullmq';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { decodeCursor, Page, pageOf } from '../common/pagination/pagination';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { newId } from '../database/id';
import { senderDomainOf } from '../domains/domain-name';
import { DomainsService } from '../domains/domains.service';
import { EventsService } from '../events/events.service';
import type { EventRow } from '../events/event.row';
import { DELIVERY_JOBS, DeliveryJobData } from '../queue/jobs';
import { PRIORITY, QUEUES } from '../queue/queue.constants';
import { RenderedContent, RenderSource } from '../templates/template-renderer';
import { renderFailure, TemplatesService } from '../templates/templates.service';
import { ContactsService } from '../contacts/contacts.service';
import { EmailContentOrigin, EmailContentResponse } from './dto/email-content.response';
import { EmailResponse } from './dto/email.response';
import { ListEmailsQueryDto } from './dto/list-emails.query';
import { Email, EmailAttachmentRef, EmailSource, EmailStatus } from './email.entity';
import { EmailContentsRepository } from './email-contents.repository';
import { EmailsRepository } from './emails.repository';
import { ReturnPaths } from './return-paths';
import { UnsubscribeLinks } from './unsubscribe-links';
import { TrackingHosts } from '../projects/tracking-hosts';
import { ReadDatabase } from '../database/read-database';

/** A recipient as the pipeline needs it (a ContactRow fits). */
export interface EmailRecipient {
  id: string;
  email: string;
  subscribed: boolean;
  suppressed: boolean;
  data: Record<string, unknown>;
}

/**
 * One message to compose. Campaigns and workflows call compose() with their
 * own source/ids, insert() inside their transaction, then enqueue() after
 * commit — the same pipeline /v1/send uses.
 */
export interface ComposeEmailInput {
  projectId: string;
  contact: EmailRecipient;
  toName?: string | null;
  source: EmailSource;
  /** MARKETING template or campaign: List-Unsubscribe, and never to unsubscribed contacts. */
  marketing: boolean;
  templateId?: string | null;
  campaignId?: string | null;
  workflowExecutionId?: string | null;
  workflowStepId?: string | null;
  from: { email: string; name?: string | null };
  replyTo?: string | null;
  content: RenderSource;
  /** Render variables over the contact's data. */
  data?: Record<string, unknown> | null;
  /** Validated extra headers (see mail-headers.ts). */
  headers?: Record<string, string>;
  attachments?: EmailAttachmentRef[];
  /** Defaults from the source: transactional before workflow before campaign. */
  priority?: number;
  /** `track: true` of a send or template: transactional mail is tracked too (marketing mail always is). */
  track?: boolean;
  /** Overrides (campaigns' trackOpens/trackClicks); by default marketing or `track` mail tracks both. */
  trackOpens?: boolean;
  trackClicks?: boolean;
  /** Prepended to the rendered subject (campaign tests: "[TEST] "). */
  subjectPrefix?: string;
}

/** A message rendered for one recipient, not yet a row (EmailsService.render, then toRow). */
export interface RenderedEmail {
  /** The email's id: the unsubscribe link in the content names it. */
  id: string;
  input: ComposeEmailInput;
  unsubscribeUrl: string;
  content: RenderedContent;
}

/**
 * Mail to many contacts from one shared content, rendered at delivery for
 * each recipient (a campaign): the rows carry no rendered copy.
 */
export interface BulkEmailSpec {
  projectId: string;
  source: EmailSource;
  campaignId: string | null;
  /** From createContent(). */
  contentId: string;
  /** The subject as written (Liquid); the row shows it until delivery writes the rendered one. */
  subject: string;
  marketing: boolean;
  trackOpens: boolean;
  trackClicks: boolean;
  from: { email: string; name?: string | null };
  replyTo?: string | null;
}

/** A contact of a bulk batch. */
export interface BulkRecipient {
  contactId: string;
  email: string;
}

/** A batch of open emails handed to delivery by enqueueOpenOfCampaign(). */
export interface EnqueuedBatch {
  count: number;
  /** Keyset position (contact id) after the batch; null when none was found. */
  lastContactId: string | null;
}

const SOURCE_PRIORITY: Record<EmailSource, number> = {
  [EmailSource.TRANSACTIONAL]: PRIORITY.TRANSACTIONAL,
  [EmailSource.WORKFLOW]: PRIORITY.WORKFLOW,
  [EmailSource.CAMPAIGN]: PRIORITY.CAMPAIGN,
};

@Injectable()
export class EmailsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.DELIVERY)
    private readonly queue: Queue<DeliveryJobData, unknown, typeof DELIVERY_JOBS.DELIVER>,
    @InjectDataSource() private readonly dataSource: DataSource,
    /** Reads that tolerate lag: list pages (docs/scaling.md). */
    private readonly read: ReadDatabase,
    private readonly repository: EmailsRepository,
    private readonly contents: EmailContentsRepository,
    private readonly templates: TemplatesService,
    private readonly events: EventsService,
    private readonly unsubscribeLinks: UnsubscribeLinks,
    private readonly domains: DomainsService,
    private readonly returnPaths: ReturnPaths,
    private readonly trackingHosts: TrackingHosts,
    private readonly contacts: ContactsService,
  ) {}

  /** The signed one-click link of a contact (and the message it is in). */
  unsubscribeUrl(projectId: string, contactId: string, emailId: string | null): string {
    return this.unsubscribeLinks.url(projectId, contactId, emailId);
  }

  /**
   * Renders one message and returns its unsaved row. Suppressed contacts, and
   * unsubscribed ones for marketing mail, get a SUPPRESSED row: it is kept
   * (the caller sees why nothing went out) but never queued.
   * Throws TemplateRenderError when the template exceeds a sandbox limit.
   */
  async compose(input: ComposeEmailInput): Promise<Email> {
    return this.toRow(await this.render(input), input.contact);
  }

  /**
   * compose()'s first half: renders the message for `input.contact` as it is
   * expected to be, and touches no database, so a caller renders before its
   * transaction and holds no connection meanwhile (POST /v1/send).
   * Throws TemplateRenderError when the template exceeds a sandbox limit.
   */
  async render(input: ComposeEmailInput): Promise<RenderedEmail> {
    const id = newId();
    // On the project's verified tracking domain (cached per project: no query per message).
    const unsubscribeUrl = this.unsubscribeLinks.url(
      input.projectId,
      input.contact.id,
      id,
      await this.trackingHosts.baseUrlOf(input.projectId),
    );
    const content = await this.templates.render(
      input.projectId,
      input.content,
      input.contact,
      input.data ?? null,
      unsubscribeUrl,
    );
    return { id, input, unsubscribeUrl, content };
  }

  /**
   * compose()'s second half: the unsaved row of a rendered message for
   * `contact` as the caller's transaction locked it (the one it was rendered
   * for), whose suppression and subscription decide whether it is SUPPRESSED.
   */
  toRow(rendered: RenderedEmail, contact: EmailRecipient): Email {
    const { id, input, unsubscribeUrl, content } = rendered;
    const headers: Record<string, string> = {
      ...(input.headers ?? {}),
      ...(input.marketing ? this.unsubscribeLinks.headers(unsubscribeUrl) : {}),
    };
    const blocked = contact.suppressed
      ? 'contact is suppressed'
      : input.marketing && !contact.subscribed
        ? 'contact is unsubscribed'
        : null;
    const email = new Email();
    Object.assign(email, {
      id,
      projectId: input.projectId,
      contactId: contact.id,
      templateId: input.templateId ?? null,
      campaignId: input.campaignId ?? null,
      workflowExecutionId: input.workflowExecutionId ?? null,
      workflowStepId: input.workflowStepId ?? null,
      source: input.source,
      marketing: input.marketing,
      trackOpens: input.trackOpens ?? (input.marketing || input.track === true),
      trackClicks: input.trackClicks ?? (input.marketing || input.track === true),
      toEmail: contact.email,
      toName: input.toName ?? null,
      fromEmail: input.from.email,
      fromName: input.from.name ?? null,
      replyTo: input.replyTo ?? null,
      subject: `${input.subjectPrefix ?? ''}${content.subject}`,
      html: content.html,
      text: content.text,
      contentId: null,
      headers,
      attachments: input.attachments ?? [],
      status: blocked ? EmailStatus.SUPPRESSED : EmailStatus.QUEUED,
      error: blocked,
      attempts: 0,
      priority: input.priority ?? SOURCE_PRIORITY[input.source],
      queuedAt: new Date(),
    });
    return email;
  }

  /** Inserts composed rows and records `email.queued` for each; call inside the caller's transaction. */
  async insert(manager: EntityManager, emails: Email[]): Promise<EventRow[]> {
    await this.repository.insertEmails(manager, emails);
    const suppressed = emails
      .filter((e) => e.status === EmailStatus.SUPPRESSED)
      .flatMap((e) => e.attachments);
    await this.contents.releaseAttachments(manager, suppressed);
    return this.events.recordMany(
      manager,
      emails.map((e) => ({
        projectId: e.projectId,
        contactId: e.contactId,
        emailId: e.id,
        name: 'email.queued',
        data: {
          subject: e.subject,
          source: e.source,
          ...(e.status === EmailStatus.SUPPRESSED ? { suppressed: true } : {}),
        },
      })),
    );
  }

  /**
   * One delivery job per open email (QUEUED, or SENDING left by a lost job),
   * job id = email id, so enqueueing the same email twice (a retried campaign
   * batch, the recovery) is a no-op. Call only after the rows are committed.
   */
  async enqueue(emails: Array<Pick<Email, 'id' | 'priority' | 'status'>>): Promise<void> {
    const jobs = emails
      .filter((e) => e.status === EmailStatus.QUEUED || e.status === EmailStatus.SENDING)
      .map((e) => ({
        name: DELIVERY_JOBS.DELIVER,
        data: { emailId: e.id },
        opts: {
          jobId: e.id,
          priority: e.priority,
          attempts: this.config.deliveryAttempts,
          backoff: { type: 'exponential', delay: this.config.deliveryBackoffMs },
        },
      }));
    for (let i = 0; i < jobs.length; i += 1000) await this.queue.addBulk(jobs.slice(i, i + 1000));
  }

  /**
   * Stores content shared by many emails (insertBulk), rendered at delivery
   * for each recipient. Call inside the caller's transaction.
   */
  async createContent(
    manager: EntityManager,
    projectId: string,
    content: { subject: string; body: string },
  ): Promise<string> {
    const id = newId();
    await this.contents.insertContent(manager, {
      id,
      projectId,
      subject: content.subject,
      body: content.body,
    });
    return id;
  }

  /**
   * One QUEUED email per recipient of a batch, with no rendered copy (it is
   * rendered at delivery from the shared content). A recipient who already has
   * an email of this campaign gets none: the database's unique (campaign,
   * contact) makes a repeated batch insert nothing. No `email.queued` events
   * (the caller records one event for the whole send) and no jobs: hand the
   * rows to delivery with enqueueOpenOfCampaign() after commit. Answers how
   * many rows were inserted. Call inside the caller's transaction.
   */
  insertBulk(
    manager: EntityManager,
    spec: BulkEmailSpec,
    recipients: BulkRecipient[],
  ): Promise<number> {
    if (recipients.length === 0) return Promise.resolve(0);
    return this.repository.insertBulk(
      manager,
      { ...spec, priority: SOURCE_PRIORITY[spec.source] },
      recipients.map(() => newId()),
      recipients,
    );
  }

  /**
   * Adds delivery jobs for a campaign's QUEUED emails after `afterContactId`
   * (keyset over contact ids), at most `limit`. Jobs that exist are left
   * alone (job id = email id), so going over the same rows again is harmless.
   */
  async enqueueOpenOfCampaign(
    campaignId: string,
    afterContactId: string | null,
    limit: number,
  ): Promise<EnqueuedBatch> {
    const rows = await this.repository.queuedOfCampaign(
      this.dataSource.manager,
      campaignId,
      afterContactId,
      limit,
    );
    await this.enqueue(rows);
    return {
      count: rows.length,
      lastContactId: rows.length > 0 ? rows[rows.length - 1].contactId : null,
    };
  }

  /**
   * Every QUEUED email of a campaign becomes CANCELLED (never sent); emails
   * already SENDING finish their attempt. Answers how many were cancelled.
   * Call inside the caller's transaction.
   */
  cancelQueuedOfCampaign(manager: EntityManager, campaignId: string): Promise<number> {
    return this.repository.cancelQueuedOfCampaign(manager, campaignId);
  }

  async list(projectId: string, query: ListEmailsQueryDto): Promise<Page<EmailResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total, totalEstimated } = await this.repository.list(
      this.read.manager,
      projectId,
      {
        status: query.status,
        contactId: query.contactId,
        campaignId: query.campaignId,
        opened: query.opened,
        clicked: query.clicked,
      },
      afterId,
      limit,
    );
    const returnPaths = await this.returnPathsOf(projectId, rows);
    return pageOf(
      rows,
      limit,
      total,
      (row) => toEmailResponse(row, returnPaths.get(row.id) ?? null),
      (row) => row.id,
      totalEstimated,
    );
  }

  async get(projectId: string, id: string): Promise<EmailResponse> {
    // `id` is a UUID: the controller's IdParamDto answered 400 for anything else.
    const row = await this.repository.findById(this.dataSource.manager, projectId, id);
    if (!row) throw ApiException.notFound('email', id);
    const returnPaths = await this.returnPathsOf(projectId, [row]);
    return toEmailResponse(row, returnPaths.get(row.id) ?? null);
  }

  /**
   * The message of one record: the rendered copy stored at send time (its
   * unsubscribe links turned into the preview link), or for campaign mail
   * (content stored once, rendered at delivery) a render made now for the
   * contact as it is now, with the preview link, so a real unsubscribe token
   * is never handed out by a read.
   */
  async content(projectId: string, id: string): Promise<EmailContentResponse> {
    const row = await this.repository.findById(this.dataSource.manager, projectId, id);
    if (!row) throw ApiException.notFound('email', id);
    if (row.contentId === null) {
      return {
        subject: row.subject,
        html: this.unsubscribeLinks.withPreviewLinks(row.html ?? ''),
        text: this.unsubscribeLinks.withPreviewLinks(row.text ?? ''),
        origin: EmailContentOrigin.STORED,
      };
    }
    const manager = this.dataSource.manager;
    const [shared, contact] = await Promise.all([
      this.contents.findContent(manager, row.contentId),
      this.contacts.findRow(manager, projectId, row.contactId),
    ]);
    // The content is RESTRICT-referenced and the contact cascades its emails: both exist while the row does.
    if (!shared || !contact) throw ApiException.notFound('email', id);
    try {
      const rendered = await this.templates.render(
        projectId,
        shared,
        contact,
        null,
        `${this.config.publicUrl}/unsubscribe/preview`,
      );
      return { ...rendered, origin: EmailContentOrigin.RENDERED };
    } catch (error) {
      throw renderFailure(error);
    }
  }

  /**
   * Each email's return path: the stored one once delivery was attempted;
   * for QUEUED and SENDING mail, the one delivery would use now (one domain
   * read per sender domain of the page); none for mail never attempted.
   */
  private async returnPathsOf(projectId: string, rows: Email[]): Promise<Map<string, string>> {
    const paths = new Map<string, string>();
    const ownDomains = new Map<string, Promise<string | null>>();
    for (const row of rows) {
      if (row.returnPath) {
        paths.set(row.id, row.returnPath);
        continue;
      }
      if (row.status !== EmailStatus.QUEUED && row.status !== EmailStatus.SENDING) continue;
      const senderDomain = senderDomainOf(row.fromEmail) ?? '';
      let ownDomain = ownDomains.get(senderDomain);
      if (!ownDomain) {
        ownDomain = this.domains.returnPathDomainOf(projectId, row.fromEmail);
        ownDomains.set(senderDomain, ownDomain);
      }
      paths.set(row.id, this.returnPaths.envelope(row.id, await ownDomain).returnPath);
    }
    return paths;
  }
}

export function toEmailResponse(row: Email, returnPath: string | null): EmailResponse {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    id: row.id,
    to: row.toEmail,
    from: row.fromEmail,
    subject: row.subject,
    status: row.status,
    source: row.source,
    contactId: row.contactId,
    templateId: row.templateId,
    campaignId: row.campaignId,
    messageId: row.messageId,
    attempts: row.attempts,
    error: row.error,
    dkimSigned: row.dkimSigned,
    returnPath,
    trackOpens: row.trackOpens,
    trackClicks: row.trackClicks,
    opens: row.opens,
    clicks: row.clicks,
    queuedAt: row.queuedAt.toISOString(),
    sentAt: iso(row.sentAt),
    openedAt: iso(row.openedAt),
    clickedAt: iso(row.clickedAt),
    bouncedAt: iso(row.bouncedAt),
    bounce: row.bounce ?? null,
    complainedAt: iso(row.complainedAt),
  };
}
