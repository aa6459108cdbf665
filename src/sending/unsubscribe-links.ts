import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { UnsubscribeTokens } from './unsubscribe-token';

/**
 * The signed one-click unsubscribe link of a contact (and the message it is
 * in): `{base}/unsubscribe/{token}`, the base being PUBLIC_URL or the
 * project's verified tracking domain. Used where a message is rendered:
 * at compose for mail stored rendered, at delivery for shared content.
 */
@Injectable()
export class UnsubscribeLinks {
  private readonly tokens: UnsubscribeTokens;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.tokens = new UnsubscribeTokens(config.appSecret, config.appSecretPrevious);
  }

  url(
    projectId: string,
    contactId: string,
    emailId: string | null,
    base = this.config.publicUrl,
  ): string {
    return `${base}/unsubscribe/${this.tokens.sign({ projectId, contactId, emailId })}`;
  }

  /** RFC 2369 / RFC 8058 headers of marketing mail. */
  headers(url: string): Record<string, string> {
    return {
      'List-Unsubscribe': `<${url}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    };
  }
}
