import { AddressInfo } from 'node:net';
import { ParsedMail, simpleParser } from 'mailparser';
import {
  SMTPServer,
  SMTPServerAddress,
  SMTPServerAddressArgs,
  SMTPServerDataStream,
  SMTPServerSession,
} from 'smtp-server';

export interface ReceivedMessage {
  /** Envelope sender and recipients as given in MAIL FROM / RCPT TO. */
  from: string;
  to: string[];
  /** Parameters of MAIL FROM (`RET`, `ENVID`, …; keys upper case), `{}` when it had none. */
  mailFromArgs: SMTPServerAddressArgs;
  /** Parameters of each RCPT TO (`NOTIFY`, `ORCPT`, …), in the order of `to`. */
  rcptToArgs: SMTPServerAddressArgs[];
  raw: Buffer;
  /** Parsed with mailparser (unless the server was started with parse: false). */
  parsed: ParsedMail | null;
  receivedAt: number;
}

export type SmtpStage = 'RCPT' | 'DATA';

/** A scripted answer: the next `times` matching commands get `code message` instead of success. */
export interface SmtpRule {
  stage: SmtpStage;
  code: number;
  message?: string;
  /** Only for this recipient (case-insensitive); every recipient when omitted. */
  recipient?: string;
  /** How many times the rule fires; forever when omitted. */
  times?: number;
}

export interface TestSmtpServerOptions {
  /** Parse every message with mailparser (turn off for benchmarks). Default true. */
  parse?: boolean;
  /** Keep raw bytes of every message. Default true. */
  keepRaw?: boolean;
  /**
   * Advertise DSN (RFC 3461) in EHLO. Default false: then, as a strict relay
   * would, MAIL FROM and RCPT TO with DSN parameters are refused with 555.
   */
  dsn?: boolean;
}

/** RFC 3461 parameters: a server that does not offer DSN may refuse a command carrying them. */
const DSN_PARAMS = ['RET', 'ENVID', 'NOTIFY', 'ORCPT'];

/**
 * A real SMTP server for tests (smtp-server on 127.0.0.1, random port, no TLS,
 * auth optional). It records every accepted message and answers from a script:
 * `server.fail({stage:'RCPT', code:451, times:2})` makes the next two RCPT TO
 * commands fail with 451, `server.fail({stage:'RCPT', code:550, recipient})`
 * bounces one address for good.
 */
export class TestSmtpServer {
  readonly messages: ReceivedMessage[] = [];
  /** Every scripted failure that fired, `451 RCPT a@b`, oldest first. */
  readonly refusals: string[] = [];
  /** Accepted message count (also counted when parse/keepRaw are off). */
  accepted = 0;
  port = 0;
  /** Milliseconds to wait before answering DATA: a slow relay, so work stays in flight longer. */
  dataDelayMs = 0;
  private rules: Array<SmtpRule & { fired: number }> = [];
  private throttle: { domain: string; perSecond: number; second: number; count: number } | null =
    null;
  private waiters: Array<{ count: number; resolve: () => void }> = [];
  private readonly server: SMTPServer;
  private readonly parse: boolean;
  private readonly keepRaw: boolean;
  private readonly dsn: boolean;

  constructor(options: TestSmtpServerOptions = {}) {
    this.parse = options.parse ?? true;
    this.keepRaw = options.keepRaw ?? true;
    this.dsn = options.dsn ?? false;
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      hideSTARTTLS: true,
      hideDSN: !this.dsn,
      logger: false,
      size: 50 * 1024 * 1024,
      maxClients: 1000,
      onMailFrom: (address, session, callback) => callback(this.unknownParams(address)),
      onRcptTo: (address, session, callback) =>
        callback(
          this.unknownParams(address) ??
            this.throttled(address.address) ??
            this.scripted('RCPT', address.address),
        ),
      onData: (stream, session, callback) => this.onData(stream, session, callback),
    });
    this.server.on('error', () => undefined);
  }

  /** `smtp://127.0.0.1:<port>`, the form SMTP_URL takes. */
  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  fail(rule: SmtpRule): void {
    this.rules.push({ ...rule, fired: 0 });
  }

  /**
   * A provider's rate limit: RCPT TO for `domain` past `perSecond` accepted
   * in one clock second answers `421 4.7.28` (Gmail's "rate limited"), and
   * counts in `deferred`. Null turns it off.
   */
  throttleDomain(domain: string | null, perSecond = 0): void {
    this.throttle = domain
      ? { domain: domain.toLowerCase(), perSecond, second: 0, count: 0 }
      : null;
  }

  /** RCPT TO answered by throttleDomain's 421, by domain. */
  readonly deferred = new Map<string, number>();

  private throttled(recipient: string): Error | null {
    const rule = this.throttle;
    const domain = recipient.slice(recipient.lastIndexOf('@') + 1).toLowerCase();
    if (!rule || domain !== rule.domain) return null;
    const second = Math.floor(Date.now() / 1000);
    if (second !== rule.second) {
      rule.second = second;
      rule.count = 0;
    }
    if (rule.count < rule.perSecond) {
      rule.count++;
      return null;
    }
    this.deferred.set(domain, (this.deferred.get(domain) ?? 0) + 1);
    const error = new Error(
      '4.7.28 Our system has detected an unusual rate of unsolicited mail; try again later',
    ) as Error & { responseCode: number };
    error.responseCode = 421;
    return error;
  }

  clearRules(): void {
    this.rules = [];
  }

  /** Messages delivered to this address (envelope recipient). */
  messagesTo(address: string): ReceivedMessage[] {
    const wanted = address.toLowerCase();
    return this.messages.filter((m) => m.to.some((t) => t.toLowerCase() === wanted));
  }

  /** Resolves once `count` messages in total have been accepted. */
  waitForMessages(count: number, timeoutMs = 30_000): Promise<void> {
    if (this.accepted >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(
          new Error(`expected ${count} messages within ${timeoutMs} ms, got ${this.accepted}`),
        );
      }, timeoutMs);
      const waiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
  }

  reset(): void {
    this.messages.length = 0;
    this.refusals.length = 0;
    this.accepted = 0;
    this.rules = [];
    this.throttle = null;
    this.deferred.clear();
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private unknownParams(address: SMTPServerAddress): Error | null {
    if (this.dsn || !address.args) return null;
    const unknown = Object.keys(address.args).filter((name) => DSN_PARAMS.includes(name));
    if (unknown.length === 0) return null;
    const error = new Error(`Parameters not recognized: ${unknown.join(' ')}`) as Error & {
      responseCode: number;
    };
    error.responseCode = 555;
    return error;
  }

  private scripted(stage: SmtpStage, recipient: string): Error | null {
    const rule = this.rules.find(
      (r) =>
        r.stage === stage &&
        (r.times === undefined || r.fired < r.times) &&
        (r.recipient === undefined || r.recipient.toLowerCase() === recipient.toLowerCase()),
    );
    if (!rule) return null;
    rule.fired++;
    this.refusals.push(`${rule.code} ${stage} ${recipient}`);
    const error = new Error(
      rule.message ?? (rule.code >= 500 ? 'Mailbox unavailable' : 'Try again later'),
    ) as Error & {
      responseCode: number;
    };
    error.responseCode = rule.code;
    return error;
  }

  private onData(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    callback: (err?: Error | null, message?: string) => void,
  ): void {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const recipients = session.envelope.rcptTo.map((r: SMTPServerAddress) => r.address);
      const rcptToArgs = session.envelope.rcptTo.map((r: SMTPServerAddress) => r.args || {});
      const refusal =
        recipients.map((r) => this.scripted('DATA', r)).find((e) => e !== null) ?? null;
      if (refusal) return callback(refusal);
      const raw = Buffer.concat(chunks);
      const mailFrom = session.envelope.mailFrom;
      const message: ReceivedMessage = {
        from: mailFrom ? mailFrom.address : '',
        to: recipients,
        mailFromArgs: (mailFrom && mailFrom.args) || {},
        rcptToArgs,
        raw: this.keepRaw ? raw : Buffer.alloc(0),
        parsed: null,
        receivedAt: Date.now(),
      };
      const record = () => {
        this.messages.push(message);
        this.accepted++;
        const ready = this.waiters.filter((w) => this.accepted >= w.count);
        this.waiters = this.waiters.filter((w) => this.accepted < w.count);
        ready.forEach((w) => w.resolve());
        callback(null, 'Queued');
      };
      if (this.dataDelayMs > 0) {
        const proceed = record;
        return void setTimeout(
          () => (this.parse ? this.parseAndRecord(raw, message, proceed, callback) : proceed()),
          this.dataDelayMs,
        );
      }
      if (!this.parse) return record();
      this.parseAndRecord(raw, message, record, callback);
    });
  }

  private parseAndRecord(
    raw: Buffer,
    message: ReceivedMessage,
    record: () => void,
    callback: (err?: Error | null) => void,
  ): void {
    simpleParser(raw)
      .then((parsed) => {
        message.parsed = parsed;
        record();
      })
      .catch((error: Error) => callback(error));
  }
}

export async function startTestSmtpServer(
  options?: TestSmtpServerOptions,
): Promise<TestSmtpServer> {
  return new TestSmtpServer(options).start();
}
