import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { addTracking } from './tracked-html';
import { ClickTarget, TrackingTokens } from './tracking-token';

/** What the delivered HTML needs to know about an email to carry tracking. */
export interface TrackableEmail {
  id: string;
  html: string;
  trackOpens: boolean;
  trackClicks: boolean;
}

/**
 * The signed URLs of open and click tracking: `{PUBLIC_URL}/t/o/{token}` (the
 * pixel) and `{PUBLIC_URL}/t/c/{token}` (a link), and the HTML as delivered
 * with them. Applied at delivery, never stored: the email row keeps the HTML
 * as rendered (small, and what GET /emails and a retry see), and tokens are
 * signed with the secret current at send time.
 */
@Injectable()
export class TrackingLinks {
  private readonly tokens: TrackingTokens;
  private readonly keep: string[];

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.tokens = new TrackingTokens(config.appSecret, config.appSecretPrevious);
    // The unsubscribe link must work as is (and is no click); tracked links are never wrapped twice.
    this.keep = [`${config.publicUrl}/unsubscribe/`, `${config.publicUrl}/t/`];
  }

  openUrl(emailId: string): string {
    return `${this.config.publicUrl}/t/o/${this.tokens.signOpen(emailId)}`;
  }

  /** null for a link too long to carry in a token (it is left as it is). */
  clickUrl(emailId: string, url: string): string | null {
    const token = this.tokens.signClick(emailId, url);
    return token === null ? null : `${this.config.publicUrl}/t/c/${token}`;
  }

  /** The HTML to put on the wire: unchanged when the email tracks nothing. */
  deliveredHtml(email: TrackableEmail): string {
    if (!email.trackOpens && !email.trackClicks) return email.html;
    return addTracking(email.html, {
      pixelUrl: email.trackOpens ? this.openUrl(email.id) : null,
      clickUrl: email.trackClicks ? (url) => this.clickUrl(email.id, url) : null,
      keep: this.keep,
    });
  }

  verifyOpen(token: string): string | null {
    return this.tokens.verifyOpen(token);
  }

  verifyClick(token: string): ClickTarget | null {
    return this.tokens.verifyClick(token);
  }
}
