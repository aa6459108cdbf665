import { connect } from 'node:net';
import { createTransport } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { ReturnPathTokens } from '../../src/sending/return-path';

/** The secret of testConfig/deploymentEnv: tokens made with it verify in the test apps. */
export const TEST_TOKENS = new ReturnPathTokens('test-secret-test-secret-test-secret-0123456789');

export interface InboundAnswer {
  code: number;
  response: string;
}

/**
 * Sends one raw message to the inbound listener with nodemailer (real SMTP or
 * LMTP on loopback) and answers the server's final reply; a refusal (RCPT,
 * DATA, size) is an answer too, not an exception.
 */
export async function sendInbound(
  port: number,
  envelope: { from: string; to: string[] },
  raw: string | Buffer,
  options: { lmtp?: boolean } = {},
): Promise<InboundAnswer> {
  const transport = createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    lmtp: options.lmtp ?? false,
  } as SMTPTransport.Options);
  try {
    const info = (await transport.sendMail({ envelope, raw })) as { response: string };
    return { code: Number(info.response.slice(0, 3)), response: info.response };
  } catch (error) {
    const failure = error as { responseCode?: number; response?: string; message: string };
    return { code: failure.responseCode ?? 0, response: failure.response ?? failure.message };
  } finally {
    transport.close();
  }
}

/**
 * A hand-driven SMTP session (no client library deciding what to declare):
 * sends each command, collects each reply. `data` is sent after a 354.
 */
export async function smtpConversation(
  port: number,
  commands: string[],
  data?: Buffer,
): Promise<string[]> {
  const socket = connect(port, '127.0.0.1');
  const replies: string[] = [];
  let buffer = '';
  let waiting: ((reply: string) => void) | null = null;
  socket.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('latin1');
    // A reply ends with a line "NNN text" (a space after the code, not a dash).
    const match = /(^|\r\n)(\d{3}) [^\r\n]*\r\n$/.exec(buffer);
    if (match && waiting) {
      const reply = buffer;
      buffer = '';
      const done = waiting;
      waiting = null;
      done(reply);
    }
  });
  const next = () => new Promise<string>((resolve) => (waiting = resolve));
  try {
    replies.push(await next()); // greeting
    for (const command of commands) {
      const reply = next();
      if (command === '<data>')
        socket.write(Buffer.concat([data ?? Buffer.alloc(0), Buffer.from('\r\n.\r\n')]));
      else socket.write(`${command}\r\n`);
      replies.push(await reply);
    }
    return replies;
  } finally {
    socket.destroy();
  }
}

/** A minimal message; `lines` pads the body to a size. */
export function plainMessage(subject: string, bodyBytes = 100): string {
  const line = 'x'.repeat(76);
  const lines = Array.from({ length: Math.ceil(bodyBytes / 78) }, () => line);
  return [
    'From: MAILER-DAEMON@mx.example.net',
    'To: someone@example.test',
    `Subject: ${subject}`,
    'Message-ID: <' + subject.replace(/\W/g, '') + '@mx.example.net>',
    '',
    ...lines,
    '',
  ].join('\r\n');
}

/**
 * An RFC 3464 DSN as a receiving MTA sends it back to a return path: the
 * notice, the per-recipient block and the returned headers (with our
 * Message-ID when given).
 */
export function dsnMessage(options: {
  to: string;
  recipient: string;
  action?: 'failed' | 'delayed' | 'delivered';
  status?: string;
  messageId?: string;
  tag?: string;
}): string {
  const boundary = `dsn-${options.tag ?? 'b'}-boundary`;
  const status = options.status ?? '5.1.1';
  return [
    'From: MAILER-DAEMON@mx.example.net (Mail Delivery System)',
    `To: ${options.to}`,
    'Subject: Undelivered Mail Returned to Sender',
    'Auto-Submitted: auto-replied',
    `Message-ID: <dsn-${options.tag ?? 'x'}@mx.example.net>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    `Your message to <${options.recipient}> could not be delivered.`,
    '',
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.net',
    '',
    `Final-Recipient: rfc822; ${options.recipient}`,
    `Action: ${options.action ?? 'failed'}`,
    `Status: ${status}`,
    `Diagnostic-Code: smtp; ${status.startsWith('5') ? '550' : '451'} ${status} mailbox unavailable`,
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    'From: sender@acme.test',
    `To: ${options.recipient}`,
    'Subject: Hello',
    ...(options.messageId ? [`Message-ID: ${options.messageId}`] : []),
    '',
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

/** An RFC 5965 ARF complaint report quoting the returned message's headers. */
export function arfMessage(options: { to: string; recipient: string; messageId: string }): string {
  const boundary = 'arf-boundary';
  return [
    'From: feedback@fbl.example.net',
    `To: ${options.to}`,
    'Subject: Complaint about message',
    'Message-ID: <arf-1@fbl.example.net>',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain',
    '',
    'This is an email abuse report.',
    '',
    `--${boundary}`,
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: TestFBL/1.0',
    'Version: 1',
    `Original-Rcpt-To: ${options.recipient}`,
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    'From: sender@acme.test',
    `To: ${options.recipient}`,
    'Subject: Hello',
    `Message-ID: ${options.messageId}`,
    '',
    `--${boundary}--`,
    '',
  ].join('\r\n');
}
