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
/** An unsubscribe link's path and its token (base64url). */
const UNSUBSCRIBE_PATH = /\/unsubscribe\/([A-Za-z0-9_-]+)/g;

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

  /**
   * `text` with every genuine unsubscribe link's token replaced by `preview` (the link that
   * unsubscribes nobody), for showing a stored message without handing out its working token.
   */
  withPreviewLinks(text: string): string {
    return text.replace(UNSUBSCRIBE_PATH, (path: string, token: string) =>
      this.tokens.verify(token) ? '/unsubscribe/preview' : path,
    );
  }

  /**
   * Adds the `mailto:` beside the HTTPS link of a List-Unsubscribe header
   * (RFC 2369 lists both); delivery calls it once the return path's domain is
   * known. Headers without List-Unsubscribe (not marketing) are returned as they are.
   */
  withMailto(headers: Record<string, string>, address: string): Record<string, string> {
    const value = headers['List-Unsubscribe'];
    if (!value || value.includes('<mailto:')) return headers;
    return { ...headers, 'List-Unsubscribe': `${value}, <mailto:${address}>` };
  }

  /** RFC 2369 / RFC 8058 headers of marketing mail. */
  headers(url: string): Record<string, string> {
    return {
      'List-Unsubscribe': `<${url}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    };
  }
}
