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
  /** The origin of its links (linkBaseUrl: the project's verified tracking domain); PUBLIC_URL when absent. */
  linkBase?: string;
}

/**
 * The signed URLs of open and click tracking: `{base}/t/o/{token}` (the
 * pixel) and `{base}/t/c/{token}` (a link), where the base is PUBLIC_URL or
 * the project's verified tracking domain, and the HTML as delivered
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
    this.keep = keptPrefixes(config.publicUrl);
  }

  openUrl(emailId: string, base = this.config.publicUrl): string {
    return `${base}/t/o/${this.tokens.signOpen(emailId)}`;
  }

  /** null for a link too long to carry in a token (it is left as it is). */
  clickUrl(emailId: string, url: string, base = this.config.publicUrl): string | null {
    const token = this.tokens.signClick(emailId, url);
    return token === null ? null : `${base}/t/c/${token}`;
  }

  /** The HTML to put on the wire: unchanged when the email tracks nothing. */
  deliveredHtml(email: TrackableEmail): string {
    if (!email.trackOpens && !email.trackClicks) return email.html;
    const base = email.linkBase ?? this.config.publicUrl;
    return addTracking(email.html, {
      pixelUrl: email.trackOpens ? this.openUrl(email.id, base) : null,
      clickUrl: email.trackClicks ? (url) => this.clickUrl(email.id, url, base) : null,
      // A message rendered before its domain was verified carries PUBLIC_URL's unsubscribe link.
      keep: base === this.config.publicUrl ? this.keep : [...this.keep, ...keptPrefixes(base)],
    });
  }

  verifyOpen(token: string): string | null {
    return this.tokens.verifyOpen(token);
  }

  verifyClick(token: string): ClickTarget | null {
    return this.tokens.verifyClick(token);
  }
}

function keptPrefixes(base: string): string[] {
  return [`${base}/unsubscribe/`, `${base}/t/`];
}
