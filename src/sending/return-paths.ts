import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ReturnPathTokens, UNSUBSCRIBE_KIND } from './return-path';

/** An email's envelope sender and the DSN envelope id (ENVID) that goes with it. */
export interface EmailEnvelope {
  /** `b-<token>@<domain>`: MAIL FROM, and the outbox file's `Return-Path`. */
  returnPath: string;
  /**
   * The return path's local part, `b-<token>`: a DSN quotes it as
   * `Original-Envelope-Id`, and ReturnPathTokens.verifyAddress reads it as it is.
   */
  envelopeId: string;
}

/**
 * The return path (VERP) of each email, signed with APP_SECRET (previous
 * secrets verify). `tokens` is what the bounce listener checks recipients with.
 */
@Injectable()
export class ReturnPaths {
  readonly tokens: ReturnPathTokens;
  /** List-Unsubscribe's `mailto:` addresses (`u-<token>`), which the inbound listener accepts too. */
  readonly unsubscribeTokens: ReturnPathTokens;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.tokens = new ReturnPathTokens(config.appSecret, config.appSecretPrevious);
    this.unsubscribeTokens = new ReturnPathTokens(
      config.appSecret,
      config.appSecretPrevious,
      UNSUBSCRIBE_KIND,
    );
  }

  /**
   * The unsubscribe-by-mail address of an email, `u-<token>@<domain>`, on the
   * domain of its return path, so it reaches the same inbound listener.
   */
  unsubscribeAddress(emailId: string, returnPath: string): string {
    return this.unsubscribeTokens.address(
      emailId,
      returnPath.slice(returnPath.lastIndexOf('@') + 1),
    );
  }

  /**
   * `ownDomain`: the sending domain's `bounces.` name once its RETURN_PATH
   * CNAME is verified (SenderDomain.returnPathDomain); RETURN_PATH_DOMAIN otherwise.
   */
  envelope(emailId: string, ownDomain: string | null): EmailEnvelope {
    const returnPath = this.tokens.address(emailId, ownDomain ?? this.config.returnPathDomain);
    return { returnPath, envelopeId: returnPath.slice(0, returnPath.lastIndexOf('@')) };
  }
}
