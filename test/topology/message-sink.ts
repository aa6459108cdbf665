import { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/**
 * A loopback SMTP server that accepts everything and keeps only what the
 * topology checks need, so tens of thousands of messages cost little: how
 * often each `Message-ID` arrived, and the recipients. Duplicate deliveries are
 * counted by `Message-ID`, which the service sets once per email record.
 */
export class MessageSink {
  /** Message-ID without its angle brackets (emails.message_id has them) → times received. */
  readonly byMessageId = new Map<string, number>();
  /** Messages without a Message-ID header (there should be none). */
  withoutId = 0;
  received = 0;
  private readonly server: SMTPServer;
  port = 0;

  constructor() {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      hideSTARTTLS: true,
      disableReverseLookup: true,
      logger: false,
      maxClients: 200,
      onData: (stream, _session, callback) => {
        let head = '';
        let headDone = false;
        stream.on('data', (chunk: Buffer) => {
          if (headDone) return;
          head += chunk.toString('latin1');
          if (head.includes('\r\n\r\n')) headDone = true;
        });
        stream.on('end', () => {
          const header = head.split('\r\n\r\n')[0].replace(/\r\n[ \t]+/g, ' ');
          const id = /^message-id:\s*<?([^>\r\n]+)>?/im.exec(header)?.[1]?.trim();
          if (id) this.byMessageId.set(id, (this.byMessageId.get(id) ?? 0) + 1);
          else this.withoutId++;
          this.received++;
          callback(null, 'Queued');
        });
      },
    });
    this.server.on('error', () => undefined);
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.server.address() as AddressInfo).port;
    return this;
  }

  /** Messages received more than once: the extra copies. */
  duplicates(): number {
    let extra = 0;
    for (const n of this.byMessageId.values()) extra += n - 1;
    return extra;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
