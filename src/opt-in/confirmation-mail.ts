import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import type { ContactRow } from '../contacts/contact.row';
import { ContactsService } from '../contacts/contacts.service';
import { EventsService } from '../events/events.service';
import type { OptInSettings } from '../projects/projects.service';
import { EmailSource } from '../sending/email.entity';
import { EmailsService } from '../sending/emails.service';
import type { RenderSource } from '../templates/template-renderer';
import { TemplatesService } from '../templates/templates.service';
import { ConfirmationTokens } from './confirmation-token';
import { OptInRepository } from './opt-in.repository';

/** The built-in confirmation email, for projects without a confirmation template. */
const BUILT_IN: RenderSource = {
  subject: 'Confirm your subscription',
  format: 'html',
  body: `<p>Please confirm that you want to receive email from {{ projectName }} at {{ email }}.</p>
<p><a href="{{ confirmUrl }}">Yes, subscribe me</a></p>
<p>If you did not ask for this, ignore this email: you will not be subscribed.</p>`,
};

/**
 * Writes and queues one confirmation email (TRANSACTIONAL, through the normal
 * sending pipeline) for a contact whose send was claimed. Rendering happens
 * outside any transaction (the render pool never holds a connection); when
 * the email cannot be written, the claim is given back so a retry may send.
 */
@Injectable()
export class ConfirmationMail {
  private readonly logger = new Logger(ConfirmationMail.name);
  private readonly tokens: ConfirmationTokens;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
    private readonly emails: EmailsService,
    private readonly templates: TemplatesService,
    private readonly confirmations: OptInRepository,
  ) {
    this.tokens = new ConfirmationTokens(config.appSecret, config.appSecretPrevious);
  }

  /** The link of a confirmation issued at `issuedAt` (the claim's time). */
  confirmUrl(projectId: string, contactId: string, issuedAt: Date): string {
    return `${this.config.publicUrl}/confirm/${this.tokens.sign({ projectId, contactId, issuedAt })}`;
  }

  get tokenVerifier(): ConfirmationTokens {
    return this.tokens;
  }

  async send(settings: OptInSettings, contact: ContactRow, issuedAt: Date): Promise<void> {
    try {
      await this.write(settings, contact, issuedAt);
    } catch (error) {
      await this.confirmations
        .releaseSend(this.dataSource.manager, contact.id, issuedAt)
        .catch((release: unknown) =>
          this.logger.warn({ err: release, contactId: contact.id }, 'cannot release a claim'),
        );
      throw error;
    }
  }

  private async write(settings: OptInSettings, contact: ContactRow, issuedAt: Date): Promise<void> {
    const projectId = contact.projectId;
    const template = settings.templateId
      ? await this.templates.findOrFail(projectId, settings.templateId).catch((error: unknown) => {
          // A deleted confirmation template falls back to the built-in email rather than failing signups.
          if (error instanceof ApiException && error.getStatus() === 404) return null;
          throw error;
        })
      : null;
    const from = template?.fromEmail
      ? { email: template.fromEmail, name: template.fromName }
      : settings.defaultFrom;
    if (!from) {
      this.logger.warn(
        { projectId, contactId: contact.id },
        'no confirmation email sent: the project has no defaultFrom',
      );
      return;
    }
    const confirmUrl = this.confirmUrl(projectId, contact.id, issuedAt);
    const rendered = await this.emails.render({
      projectId,
      contact,
      source: EmailSource.TRANSACTIONAL,
      // Never marketing: the point is to reach a contact who is not subscribed yet.
      marketing: false,
      templateId: template?.id ?? null,
      from,
      replyTo: template?.replyTo ?? null,
      content: template
        ? { subject: template.subject, body: template.body, format: 'html' }
        : BUILT_IN,
      data: template ? { confirmUrl } : { confirmUrl, projectName: settings.name },
      track: template?.track === true,
    });
    const written = await this.dataSource.transaction(async (manager) => {
      // The row as it is now: a contact suppressed meanwhile gets a SUPPRESSED email, never sent.
      const current = await this.contacts.findRow(manager, projectId, contact.id);
      if (!current) return null;
      const row = this.emails.toRow(rendered, current);
      return { email: row, queued: await this.emails.insert(manager, [row]) };
    });
    if (!written) return;
    const { email, queued } = written;
    await this.emails.enqueue([email]);
    await this.events.publish(queued.map((event) => ({ ...event, email: contact.email })));
  }
}
