import * as dgram from 'node:dgram';
import * as net from 'node:net';
import { AddressInfo } from 'node:net';
import * as packet from 'dns-packet';

const NXDOMAIN = 3;
const SERVFAIL = 2;
/** Classic DNS-over-UDP limit when the query carries no EDNS0 OPT record. */
const UDP_LIMIT_WITHOUT_EDNS = 512;

/**
 * A small authoritative DNS server for tests, on 127.0.0.1 with a random free
 * port, over UDP and TCP (same port). TXT records are set and removed at
 * runtime; a record may be several character-strings (the way long DKIM keys
 * are published). MX records are set the same way (setMx). A name may instead hold a CNAME, given in answer to any
 * question about it (the target is not followed). A name without records
 * answers NXDOMAIN.
 *
 * Point the app at it with `DNS_SERVERS: dns.address`.
 */
export class TestDnsServer {
  private readonly txt = new Map<string, string[][]>();
  private readonly cnames = new Map<string, string>();
  private readonly mx = new Map<string, Array<{ exchange: string; preference: number }>>();
  private readonly failing = new Set<string>();
  private udp?: dgram.Socket;
  private tcp?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  /** Every question asked, `TXT example.com`, newest last. */
  readonly queries: string[] = [];
  port = 0;

  /** `127.0.0.1:<port>`, the form DNS_SERVERS takes. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /**
   * Replaces the TXT records at a name. Each record is a string (split into
   * 255-byte character-strings automatically) or an explicit list of strings.
   */
  setTxt(name: string, ...records: Array<string | string[]>): void {
    this.txt.set(key(name), records.map(toStrings));
  }

  /** Adds one TXT record beside those already at the name. */
  addTxt(name: string, record: string | string[]): void {
    const existing = this.txt.get(key(name)) ?? [];
    this.txt.set(key(name), [...existing, toStrings(record)]);
  }

  removeTxt(name: string): void {
    this.txt.delete(key(name));
  }

  /** Makes `name` an alias of `target` (a CNAME record, the only record at the name). */
  setCname(name: string, target: string): void {
    this.txt.delete(key(name));
    this.cnames.set(key(name), target);
  }

  removeCname(name: string): void {
    this.cnames.delete(key(name));
  }

  /** Replaces the MX records at a name (`exchange` host names with their preference). */
  setMx(name: string, ...records: Array<{ exchange: string; preference: number }>): void {
    this.mx.set(key(name), records);
  }

  /** Answers SERVFAIL for a name until cleared: a broken upstream, not an absent record. */
  setFailure(name: string, failing = true): void {
    if (failing) this.failing.add(key(name));
    else this.failing.delete(key(name));
  }

  clear(): void {
    this.txt.clear();
    this.cnames.clear();
    this.mx.clear();
    this.failing.clear();
  }

  async start(): Promise<this> {
    // TCP first on port 0, then UDP on the same port (retried if that UDP port is taken).
    for (let attempt = 0; attempt < 20; attempt++) {
      const tcp = net.createServer((socket) => this.serveTcp(socket));
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(0, '127.0.0.1', () => resolve());
      });
      const port = (tcp.address() as AddressInfo).port;
      const udp = dgram.createSocket('udp4');
      const bound = await new Promise<boolean>((resolve) => {
        udp.once('error', () => resolve(false));
        udp.bind(port, '127.0.0.1', () => resolve(true));
      });
      if (bound) {
        udp.on('message', (msg, rinfo) => {
          const reply = this.answer(msg, true);
          if (reply) udp.send(reply, rinfo.port, rinfo.address);
        });
        this.udp = udp;
        this.tcp = tcp;
        this.port = port;
        return this;
      }
      udp.close();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    }
    throw new Error('TestDnsServer: no free port for UDP and TCP');
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await Promise.all([
      new Promise<void>((resolve) => (this.udp ? this.udp.close(() => resolve()) : resolve())),
      new Promise<void>((resolve) => (this.tcp ? this.tcp.close(() => resolve()) : resolve())),
    ]);
  }

  private serveTcp(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const reply = this.answer(buffered.subarray(2, 2 + length), false);
        buffered = buffered.subarray(2 + length);
        if (reply) {
          const framed = Buffer.alloc(2 + reply.length);
          framed.writeUInt16BE(reply.length, 0);
          reply.copy(framed, 2);
          socket.write(framed);
        }
      }
    });
  }

  private answer(message: Buffer, overUdp: boolean): Buffer | null {
    let query: packet.DecodedPacket;
    try {
      query = packet.decode(message);
    } catch {
      return null;
    }
    const question = query.questions?.[0];
    if (!question) return null;
    this.queries.push(`${question.type} ${key(question.name)}`);
    const base = { type: 'response' as const, id: query.id, questions: query.questions };
    const records = this.txt.get(key(question.name));
    let flags = packet.AUTHORITATIVE_ANSWER;
    if (this.failing.has(key(question.name)))
      return packet.encode({ ...base, flags: flags | SERVFAIL });
    const cname = this.cnames.get(key(question.name));
    if (cname !== undefined) {
      return packet.encode({
        ...base,
        flags,
        answers: [{ type: 'CNAME', name: question.name, ttl: 1, class: 'IN', data: cname }],
      });
    }
    const mx = this.mx.get(key(question.name));
    if (mx && question.type === 'MX') {
      return packet.encode({
        ...base,
        flags,
        answers: mx.map((data) => ({ type: 'MX', name: question.name, ttl: 1, class: 'IN', data })),
      });
    }
    // A name with only MX records exists: other questions about it get no answer, not NXDOMAIN.
    if (!records) return packet.encode({ ...base, flags: mx ? flags : flags | NXDOMAIN });
    const answers: packet.Answer[] =
      question.type === 'TXT'
        ? records.map((strings) => ({
            type: 'TXT',
            name: question.name,
            ttl: 1,
            class: 'IN',
            data: strings,
          }))
        : [];
    const encoded = packet.encode({ ...base, flags, answers });
    const hasEdns = (query.additionals ?? []).some((a) => a.type === 'OPT');
    if (overUdp && !hasEdns && encoded.length > UDP_LIMIT_WITHOUT_EDNS) {
      // Too big for plain UDP: set TC so the client retries over TCP, as a real server would.
      flags |= packet.TRUNCATED_RESPONSE;
      return packet.encode({ ...base, flags, answers: [] });
    }
    return encoded;
  }
}

function toStrings(record: string | string[]): string[] {
  if (!Array.isArray(record)) return splitTxt(record);
  for (const part of record) {
    // The wire format has a one-byte length; a longer string would make an answer resolvers reject.
    if (Buffer.byteLength(part, 'utf8') > 255)
      throw new Error('TestDnsServer: a TXT character-string is at most 255 bytes');
  }
  return record;
}

function key(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

/** Splits a value into character-strings of at most 255 bytes, as zone files do for long records. */
export function splitTxt(value: string, size = 255): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const parts: string[] = [];
  for (let i = 0; i < bytes.length; i += size)
    parts.push(bytes.subarray(i, i + size).toString('utf8'));
  return parts.length ? parts : [''];
}

export async function startTestDnsServer(): Promise<TestDnsServer> {
  return new TestDnsServer().start();
}
