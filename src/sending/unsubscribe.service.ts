import { Inject, Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { queryRows } from '../contacts/query-rows';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { EventsService } from '../events/events.service';
import { EmailsRepository } from './emails.repository';
import { UnsubscribeTarget, UnsubscribeTokens } from './unsubscribe-token';

export interface UnsubscribePage {
  email: string;
  subscribed: boolean;
}

/** The two halves of RFC 8058: a confirmation page (GET) and the unsubscribe itself (POST). */
@Injectable()
export class UnsubscribeService {
  private readonly tokens: UnsubscribeTokens;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly repository: EmailsRepository,
    private readonly events: EventsService,
  ) {
    this.tokens = new UnsubscribeTokens(config.appSecret);
  }

  /** What the confirmation page shows. Forged tokens and erased contacts are 404. */
  async describe(token: string): Promise<UnsubscribePage> {
    const target = this.verify(token);
    const rows = await queryRows<UnsubscribePage>(
      this.repository.manager,
      'SELECT email, subscribed FROM contacts WHERE project_id = $1 AND id = $2',
      [target.projectId, target.contactId],
    );
    if (rows.length === 0) throw notFound();
    return rows[0];
  }

  /**
   * Unsubscribes the contact of a genuine token; `contact.unsubscribed` is
   * recorded once, on the actual change, so repeated clicks are harmless.
   */
  async unsubscribe(token: string): Promise<UnsubscribePage> {
    const target = this.verify(token);
    const outcome = await this.repository.transaction(async (manager) => {
      const changed = await queryRows<{ email: string }>(
        manager,
        `UPDATE contacts SET subscribed = false, updated_at = now()
          WHERE project_id = $1 AND id = $2 AND subscribed RETURNING email`,
        [target.projectId, target.contactId],
      );
      if (changed.length === 0) {
        const existing = await queryRows<{ email: string }>(
          manager,
          'SELECT email FROM contacts WHERE project_id = $1 AND id = $2',
          [target.projectId, target.contactId],
        );
        if (existing.length === 0) throw notFound();
        return { email: existing[0].email, event: null };
      }
      const event = await this.events.record(manager, {
        projectId: target.projectId,
        contactId: target.contactId,
        emailId: target.emailId,
        name: 'contact.unsubscribed',
        data: { source: 'unsubscribe-link', ...(target.emailId ? { emailId: target.emailId } : {}) },
      });
      return { email: changed[0].email, event };
    });
    if (outcome.event) await this.events.publish([{ ...outcome.event, email: outcome.email }]);
    return { email: outcome.email, subscribed: false };
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
