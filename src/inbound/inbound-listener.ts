import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import {
  SMTPServer,
  SMTPServerAddress,
  SMTPServerDataStream,
  SMTPServerSession,
} from 'smtp-server';
import { AppConfig, runsWorkers } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ReturnPathTokens } from '../sending/return-path';
import { InboundMessagesService } from './inbound-messages.service';
import { InboundMetrics } from './inbound-metrics';
import { InboundUnsubscribes } from './inbound-unsubscribes';

/** Longest wait at shutdown for clients still connected (they are then told 421 and dropped). */
const MAX_CLIENTS = 200;
const CLOSE_TIMEOUT_MS = 5_000;

function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

/**
 * The inbound SMTP (or LMTP) listener for bounces and complaints, in worker
 * processes when INBOUND_SMTP_PORT is set. It accepts mail only for a return
 * path whose token verifies, for the complaint-loop address and for
 * List-Unsubscribe's `mailto:` address whose token verifies, so it is
 * neither an open relay nor a source of backscatter, and answers 250 only
 * once the raw message is committed to Postgres; parsing runs on the inbound
 * queue (InboundReports).
 */
@Injectable()
export class InboundListener implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('InboundListener');
  private server: SMTPServer | null = null;
  private readonly storing = new Set<Promise<unknown>>();
  private readonly complaintAddress: string;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly messages: InboundMessagesService,
    private readonly tokens: ReturnPathTokens,
    private readonly metrics: InboundMetrics,
    private readonly unsubscribes: InboundUnsubscribes,
  ) {
    this.complaintAddress = `fbl@${config.returnPathDomain}`.toLowerCase();
  }

  /** The port it listens on (the configured one; tests read it). */
  get port(): number | null {
    const address = this.server?.server.address();
    return address && typeof address === 'object' ? address.port : null;
  }

  async onApplicationBootstrap(): Promise<void> {
    const port = this.config.inboundSmtpPort;
    if (port === null || !runsWorkers(this.config)) return;
    const server = new SMTPServer({
      lmtp: this.config.inboundLmtp,
      size: this.config.inboundMaxBytes,
      // Port 25 mail from other MTAs: nobody logs in, and no certificate is configured.
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      // The client's name is not used, and a reverse lookup delays every greeting by a DNS round trip.
      disableReverseLookup: true,
      closeTimeout: CLOSE_TIMEOUT_MS,
      // A public port 25: beyond this many connections at once, new ones are told 421 (try later)
      // rather than each holding a socket and a storage slot.
      maxClients: MAX_CLIENTS,
      banner: 'Mailwright bounce and complaint listener',
      onRcptTo: (address, _session, callback) => callback(this.checkRecipient(address)),
      onData: (stream, session, callback) => this.receive(stream, session, callback),
    });
    server.on('error', (error) => this.logger.warn({ err: error }, 'inbound listener error'));
    await new Promise<void>((resolve, reject) => {
      const failed = (error: Error) => reject(error);
      server.server.once('error', failed);
      server.listen(port, this.config.inboundSmtpHost, () => {
        server.server.off('error', failed);
        resolve();
      });
    });
    this.server = server;
    this.logger.log(
      { port, host: this.config.inboundSmtpHost, lmtp: this.config.inboundLmtp },
      `inbound ${this.config.inboundLmtp ? 'LMTP' : 'SMTP'} listener on ${this.config.inboundSmtpHost}:${port}`,
    );
  }

  /** Stops accepting, lets messages being stored finish (their 250 goes out), then closes. */
  async beforeApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.allSettled([...this.storing]);
    await closed;
    await this.messages.settled();
  }

  private checkRecipient(address: SMTPServerAddress): Error | undefined {
    const recipient = address.address.toLowerCase();
    if (recipient === this.complaintAddress || this.tokens.verifyAddress(recipient) !== null) {
      return undefined;
    }
    // List-Unsubscribe's mailto: address (inbound-unsubscribes.ts).
    if (this.unsubscribes.emailOf(recipient) !== null) return undefined;
    this.metrics.count('refused_recipient');
    return smtpError(550, '5.1.1 No such recipient here');
  }

  private receive(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    callback: (error?: Error | null, message?: string) => void,
  ): void {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => {
      // Over the limit: keep reading to the end of DATA, keep nothing (smtp-server answers 552).
      if (stream.sizeExceeded) chunks.length = 0;
      else chunks.push(chunk);
    });
    stream.on('end', () => {
      if (stream.sizeExceeded) {
        this.metrics.count('refused_size');
        callback(smtpError(552, '5.3.4 Message too big'));
        return;
      }
      const { mailFrom, rcptTo } = session.envelope;
      const storing = this.messages
        .store({
          raw: Buffer.concat(chunks),
          mailFrom: mailFrom ? mailFrom.address : '',
          rcptTo: rcptTo.map((rcpt) => rcpt.address),
        })
        .then(
          (id) => {
            this.metrics.count('stored');
            callback(null, `2.0.0 Stored as ${id}`);
          },
          (error: unknown) => {
            this.logger.error({ err: error }, 'cannot store an inbound message; answered 451');
            callback(smtpError(451, '4.3.0 Cannot store the message now, try again later'));
          },
        )
        .finally(() => this.storing.delete(storing));
      this.storing.add(storing);
    });
  }
}
