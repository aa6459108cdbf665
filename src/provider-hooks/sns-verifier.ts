import { Inject, Injectable } from '@nestjs/common';
import { KeyObject, verify, X509Certificate } from 'node:crypto';
import { LruMap } from '../common/cache/lru-map';
import { sendOutbound } from '../common/http/outbound-http';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';

/** The fields of an SNS message (HTTP/S delivery, raw delivery off) that the signature covers or that we read. */
export interface SnsMessage {
  Type: string;
  MessageId: string;
  TopicArn: string;
  Subject?: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: string;
  Signature: string;
  SigningCertURL: string;
  SubscribeURL?: string;
  Token?: string;
}

const FETCH_TIMEOUT_MS = 5_000;
const MAX_CERTIFICATE_BYTES = 64 * 1024;

/** The string SNS signs: `Name\nvalue\n` for these fields, in this order, those absent skipped. */
function stringToSign(message: SnsMessage): string {
  const fields =
    message.Type === 'Notification'
      ? ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type']
      : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];
  const record = message as unknown as Record<string, unknown>;
  return fields
    .filter((field) => typeof record[field] === 'string')
    .map((field) => `${field}\n${record[field] as string}\n`)
    .join('');
}

/** Whether `host` matches a pattern whose `*` labels stand for any one DNS label. */
export function hostMatches(host: string, patterns: readonly string[]): boolean {
  const labels = host.toLowerCase().split('.');
  return patterns.some((pattern) => {
    const wanted = pattern.split('.');
    return (
      wanted.length === labels.length &&
      wanted.every((label, i) =>
        label === '*' ? /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(labels[i]) : label === labels[i],
      )
    );
  });
}

/**
 * Amazon SNS message signatures (SignatureVersion 1: RSA-SHA1, 2:
 * RSA-SHA256) checked against the certificate at SigningCertURL, fetched
 * only from SES_SNS_HOST_PATTERN hosts over https (http only with
 * SES_SNS_ALLOW_HTTP) and kept per URL. Subscription confirmations are
 * followed under the same host rule.
 */
@Injectable()
export class SnsVerifier {
  private readonly certificates = new LruMap<string, Promise<X509Certificate | null>>(100);

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** The URL when SNS may have made it (allowed scheme and host), else null. */
  allowedUrl(raw: unknown): URL | null {
    if (typeof raw !== 'string') return null;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return null;
    }
    const schemeOk =
      url.protocol === 'https:' || (url.protocol === 'http:' && this.config.sesSnsAllowHttp);
    if (!schemeOk || url.username || url.password) return null;
    return hostMatches(url.hostname.replace(/^\[|\]$/g, ''), this.config.sesSnsHostPatterns)
      ? url
      : null;
  }

  async verify(message: SnsMessage): Promise<boolean> {
    const algorithm =
      message.SignatureVersion === '1'
        ? 'RSA-SHA1'
        : message.SignatureVersion === '2'
          ? 'RSA-SHA256'
          : null;
    const url = this.allowedUrl(message.SigningCertURL);
    if (!algorithm || !url || !url.pathname.endsWith('.pem')) return false;
    if (typeof message.Signature !== 'string') return false;
    const certificate = await this.certificate(url.href);
    // Checked at each use: a cached certificate may expire while the process runs.
    const now = Date.now();
    if (
      !certificate ||
      Date.parse(certificate.validFrom) > now ||
      Date.parse(certificate.validTo) < now
    )
      return false;
    const key: KeyObject = certificate.publicKey;
    try {
      return verify(
        algorithm,
        Buffer.from(stringToSign(message), 'utf8'),
        key,
        Buffer.from(message.Signature, 'base64'),
      );
    } catch {
      return false;
    }
  }

  /** Confirms a subscription by visiting its SubscribeURL; false when the URL is not SNS's or the visit failed. */
  async confirmSubscription(message: SnsMessage): Promise<boolean> {
    const url = this.allowedUrl(message.SubscribeURL);
    if (!url) return false;
    try {
      const response = await sendOutbound({
        url: url.href,
        method: 'GET',
        headers: {},
        timeoutMs: FETCH_TIMEOUT_MS,
        allowPrivate: this.config.webhookAllowPrivate,
        maxBodyBytes: 4096,
      });
      return response.status >= 200 && response.status < 300;
    } catch {
      return false;
    }
  }

  private certificate(url: string): Promise<X509Certificate | null> {
    const cached = this.certificates.get(url);
    if (cached) return cached;
    const loading = this.fetchCertificate(url);
    this.certificates.set(url, loading);
    // A failed fetch is not remembered: the next message tries again.
    void loading.then((key) => {
      if (!key && this.certificates.get(url) === loading) this.certificates.delete(url);
    });
    return loading;
  }

  private async fetchCertificate(url: string): Promise<X509Certificate | null> {
    try {
      const response = await sendOutbound({
        url,
        method: 'GET',
        headers: {},
        timeoutMs: FETCH_TIMEOUT_MS,
        allowPrivate: this.config.webhookAllowPrivate,
        maxBodyBytes: MAX_CERTIFICATE_BYTES,
      });
      if (response.status !== 200) return null;
      return new X509Certificate(response.body);
    } catch {
      return null;
    }
  }
}
