import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ContactsService, UnsubscribeResult } from '../contacts/contacts.service';
import { EventsService } from '../events/events.service';
import { EmailsRepository } from './emails.repository';
import { UnsubscribeTarget, UnsubscribeTokens } from './unsubscribe-token';

export interface UnsubscribePage {
  email: string;
  subscribed: boolean;
}

/**
 * The two halves of RFC 8058, a confirmation page (GET) and the unsubscribe
 * itself (POST), and the same unsubscribe by mail (RFC 2369 `mailto:`).
 */
@Injectable()
export class UnsubscribeService {
  private readonly tokens: UnsubscribeTokens;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly contacts: ContactsService,
    private readonly events: EventsService,
    private readonly emails: EmailsRepository,
  ) {
    this.tokens = new UnsubscribeTokens(config.appSecret, config.appSecretPrevious);
  }

  /** What the confirmation page shows. Forged tokens and erased contacts are 404. */
  async describe(token: string): Promise<UnsubscribePage> {
    const target = this.verify(token);
    const contact = await this.contacts
      .get(target.projectId, target.contactId)
      .catch((error: unknown) => {
        throw error instanceof ApiException && error.getStatus() === 404 ? notFound() : error;
      });
    return { email: contact.email, subscribed: contact.subscribed };
  }

  /**
   * Unsubscribes the contact of a genuine token; `contact.unsubscribed` is
   * recorded once, on the actual change, so repeated clicks are harmless.
   */
  async unsubscribe(token: string): Promise<UnsubscribePage> {
    const outcome = await this.apply(this.verify(token), 'unsubscribe-link');
    if (!outcome.contact) throw notFound();
    return { email: outcome.contact.email, subscribed: false };
  }

  /**
   * Unsubscribe by mail (List-Unsubscribe's `mailto:`): the recipient of the
   * email is unsubscribed as by the one-click POST, with the same event and
   * campaign count. False when the email or its contact no longer exists.
   */
  async unsubscribeRecipientOf(emailId: string): Promise<boolean> {
    const email = await this.emails.findForBounce(this.dataSource.manager, emailId);
    if (!email) return false;
    const target = { projectId: email.projectId, contactId: email.contactId, emailId };
    return (await this.apply(target, 'unsubscribe-mail')).contact !== null;
  }

  private async apply(target: UnsubscribeTarget, source: string): Promise<UnsubscribeResult> {
    const outcome = await this.dataSource.transaction(async (manager) => {
      const result = await this.contacts.unsubscribe(manager, target.projectId, target.contactId, {
        emailId: target.emailId,
        data: {
          source,
          ...(target.emailId ? { emailId: target.emailId } : {}),
        },
      });
      // Counted in the email's campaign (`unsubscribed`) when this link made the change.
      if (result.changed && target.emailId)
        await this.emails.markUnsubscribed(manager, target.emailId);
      return result;
    });
    if (outcome.contact && outcome.event)
      await this.events.publish([{ ...outcome.event, email: outcome.contact.email }]);
    return outcome;
  }

  private verify(token: string): UnsubscribeTarget {
    const target = this.tokens.verify(token);
    if (!target) throw notFound();
    return target;
  }
}

function notFound(): ApiException {
  return new ApiException(404, 'CONTACT_NOT_FOUND', 'This unsubscribe link is not valid', {
    suggestion: 'Use the link exactly as it appears in the email.',
  });
}
