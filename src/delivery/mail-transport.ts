import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { createPrivateKey, KeyObject, randomBytes } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTransport } from 'nodemailer';
import type { NodemailerError } from 'nodemailer/lib/errors';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';

export interface Mailbox {
  email: string;
  name?: string | null;
}

/** Everything needed to put one message on the wire. */
export interface OutgoingMessage {
  /** Without angle brackets: `<id>@<sender domain>`. */
  messageId: string;
  from: Mailbox;
  to: Mailbox;
  replyTo?: string | null;
  subject: string;
  html: string;
  text: string;
  headers: Record<string, string>;
  attachments: Array<{ filename: string; contentType: string; content: Buffer }>;
  dkim: { domainName: string; keySelector: string; privateKey: string } | null;
  /** The envelope sender (MAIL FROM), `b-<token>@<domain>`; the header From stays `from`. */
  returnPath: string;
  /** ENVID of the DSN request; a DSN quotes it as Original-Envelope-Id. */
  envelopeId: string;
}

export interface TransportResult {
  /** The server's final reply (SMTP) or the file written (outbox). */
  response: string;
}

/** How a failed attempt is treated: retried later, or final for this recipient. */
export type FailureKind = 'transient' | 'permanent';

/**
 * Every header DKIM covers. nodemailer's default list misses
 * List-Unsubscribe-Post, which receivers (Gmail, Yahoo) want signed for
 * one-click unsubscribe to be honoured.
 */
const DKIM_HEADER_FIELDS = [
  'From',
  'Sender',
  'Reply-To',
  'Subject',
  'Date',
  'Message-ID',
  'To',
  'Cc',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'Content-ID',
  'Content-Description',
  'In-Reply-To',
  'References',
  'List-Id',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
].join(':');

/**
 * Parsed DKIM keys kept per process, by their PEM text. Parsing a PKCS#8 PEM
 * costs more than the RSA signature itself (about 0.85 ms against 0.4 ms for
 * a 2048-bit key), and nodemailer would parse the PEM for every message. The
 * PEM still comes from the sender check of each message (uncached), so a
 * deleted domain or a new key applies at once; an entry no check answers
 * any more only waits here for eviction.
 */
const SIGNING_KEY_CACHE_SIZE = 256;

/** Pool size: connections kept open to the relay, shared by every delivery job of the process. */
export const SMTP_POOL_CONNECTIONS = 10;

type Mailer = ReturnType<typeof createTransport>;

/** What nodemailer's pool logs when a reused connection was closed before a message went (pool-resource.js). */
const CLOSED_BEFORE_SENDING = 'was closed by the server before message';
/** A reply in an error text: `Server closed the connection: 421 4.7.28 …`. */
const REPLY_IN_TEXT = /\b([45]\d\d)([ -].*)$/;
/** Reasons kept for messages whose send has not answered yet (a bound, not a working set). */
const DROPPED_REASONS_SIZE = 1000;

/**
 * The wire. With SMTP_URL: a pooled SMTP client. Without: each message is
 * written as an RFC 5322 .eml file to MAIL_OUTBOX_DIR (built and DKIM-signed
 * by nodemailer's stream transport, written to a temp name then renamed so a
 * reader never sees half a file), beginning with `Return-Path:`.
 */
@Injectable()
export class MailTransport implements OnApplicationShutdown {
  private readonly logger = new Logger(MailTransport.name);
  private readonly mailer: Mailer;
  private readonly outbox: string | null;
  private outboxReady: Promise<unknown> | null = null;
  private readonly signingKeys = new Map<string, KeyObject>();
  /** Why the pool's connection was closed before each of these messages went out, by `<Message-ID>`. */
  private readonly droppedBefore = new Map<string, string>();

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    if (config.smtpUrl) {
      this.outbox = null;
      this.mailer = createTransport({
        pool: true,
        url: config.smtpUrl,
        maxConnections: SMTP_POOL_CONNECTIONS,
        maxMessages: 1000,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 60_000,
        disableFileAccess: true,
        disableUrlAccess: true,
        // The pool would silently re-send a message whose connection closed before it went, up to
        // 5 times within 2 s: also after a 421 at RCPT (a provider asking us to slow down), which
        // must reach delivery pacing instead of hitting the provider again. send() retries a
        // merely stale connection itself.
        maxRequeues: 0,
        logger: this.poolLogger(),
      });
    } else {
      this.outbox = config.mailOutboxDir;
      this.mailer = createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
    }
  }

  get kind(): 'smtp' | 'outbox' {
    return this.outbox === null ? 'smtp' : 'outbox';
  }

  async send(message: OutgoingMessage): Promise<TransportResult> {
    try {
      return await this.sendOnce(message);
    } catch (error) {
      const key = `<${message.messageId}>`;
      const dropped = this.droppedBefore.get(key);
      if (dropped === undefined) throw error;
      this.droppedBefore.delete(key);
      const reply = REPLY_IN_TEXT.exec(dropped);
      // The server said why it closed (421 …): that is the answer to this message.
      if (reply)
        throw Object.assign(new Error(dropped), {
          code: 'ECONNECTION',
          responseCode: Number(reply[1]),
          response: `${reply[1]}${reply[2]}`,
        });
      // A pooled connection the server had dropped while idle: no byte went, one more try.
      return this.sendOnce(message);
    }
  }

  /**
   * Only the pool's note that a reused connection closed before a message
   * went is kept; nodemailer's other log lines are dropped as before.
   */
  private poolLogger(): Record<string, (...args: unknown[]) => void> {
    const ignore = (): void => undefined;
    return {
      trace: ignore,
      debug: ignore,
      warn: ignore,
      error: ignore,
      fatal: ignore,
      info: (meta, format, ...args) => {
        if (typeof format !== 'string' || !format.includes(CLOSED_BEFORE_SENDING)) return;
        const messageId = (meta as { messageId?: unknown } | undefined)?.messageId;
        if (typeof messageId !== 'string') return;
        if (this.droppedBefore.size >= DROPPED_REASONS_SIZE)
          this.droppedBefore.delete(this.droppedBefore.keys().next().value as string);
        this.droppedBefore.set(messageId, String(args[args.length - 1] ?? ''));
      },
    };
  }

  private async sendOnce(message: OutgoingMessage): Promise<TransportResult> {
    const info = await this.mailer.sendMail({
      messageId: `<${message.messageId}>`,
      from: message.from.name
        ? { name: message.from.name, address: message.from.email }
        : message.from.email,
      to: message.to.name ? { name: message.to.name, address: message.to.email } : message.to.email,
      replyTo: message.replyTo ?? undefined,
      subject: message.subject,
      html: message.html,
      text: message.text,
      headers: message.headers,
      attachments: message.attachments.map((a) => ({
        filename: a.filename,
        contentType: a.contentType,
        content: a.content,
      })),
      dkim: message.dkim
        ? {
            ...message.dkim,
            privateKey: this.signingKey(message.dkim.privateKey),
            headerFieldNames: DKIM_HEADER_FIELDS,
          }
        : undefined,
      envelope: { from: message.returnPath, to: [message.to.email] },
      // Sent only when the relay advertises DSN (nodemailer checks its EHLO): harmless elsewhere.
      dsn: {
        id: message.envelopeId,
        return: 'headers',
        notify: ['failure', 'delay'],
        recipient: message.to.email,
      },
      disableFileAccess: true,
      disableUrlAccess: true,
    });
    if (this.outbox === null)
      return { response: String((info as { response?: string }).response ?? '') };
    // What the receiving server would add at final delivery: the envelope sender, outside the DKIM signature.
    const eml = Buffer.concat([
      Buffer.from(`Return-Path: <${message.returnPath}>\r\n`),
      (info as { message: Buffer }).message,
    ]);
    return { response: await this.writeEml(message.messageId, eml) };
  }

  /** The parsed key of a PEM (cached); the PEM itself when it does not parse, for nodemailer to handle as before. */
  private signingKey(pem: string): KeyObject | string {
    const cached = this.signingKeys.get(pem);
    if (cached) return cached;
    let key: KeyObject;
    try {
      key = createPrivateKey(pem);
    } catch {
      return pem;
    }
    if (this.signingKeys.size >= SIGNING_KEY_CACHE_SIZE)
      this.signingKeys.delete(this.signingKeys.keys().next().value as string);
    this.signingKeys.set(pem, key);
    return key;
  }

  private async writeEml(messageId: string, bytes: Buffer): Promise<string> {
    const dir = this.outbox as string;
    this.outboxReady ??= mkdir(dir, { recursive: true });
    await this.outboxReady;
    const base = messageId.replace(/[^A-Za-z0-9._-]/g, '_');
    const file = join(dir, `${base}.eml`);
    const temp = join(dir, `.${base}.${randomBytes(4).toString('hex')}.tmp`);
    await writeFile(temp, bytes, { mode: 0o640 });
    await rename(temp, file);
    return `written ${file}`;
  }

  onApplicationShutdown(): void {
    this.mailer.close();
    this.logger.debug('mail transport closed');
  }
}

/**
 * 5xx replies (except 503, a session-state problem) are permanent for this
 * recipient: retrying would get the same answer. Everything else — 4xx,
 * refused or dropped connections, timeouts — is worth another attempt.
 */
export function classifyFailure(error: unknown): FailureKind {
  const e = error as NodemailerError;
  if (typeof e?.permanent === 'boolean') return e.permanent ? 'permanent' : 'transient';
  if (typeof e?.responseCode === 'number') {
    return e.responseCode >= 500 && e.responseCode !== 503 ? 'permanent' : 'transient';
  }
  return 'transient';
}

/** A short, secret-free description of a failure for the email record. */
export function describeFailure(error: unknown): string {
  const e = error as NodemailerError;
  const parts = [e?.code, e?.responseCode, e?.response ?? e?.message].filter(
    (p) => p !== undefined && p !== '',
  );
  return parts.join(' ').slice(0, 1000) || 'unknown error';
}
