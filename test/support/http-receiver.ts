import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

/** What to answer one request: a status, an optional body and headers, after an optional wait. */
export interface Answer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

/**
 * A loopback HTTP server that records every request and answers from a
 * script: `answers` are used in order, then `fallback` (200 by default).
 */
export class HttpReceiver {
  readonly requests: ReceivedRequest[] = [];
  answers: Answer[] = [];
  fallback: Answer = { status: 200, body: 'ok' };
  private server: Server;
  port = 0;

  constructor() {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 1000;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** Resolves once `count` requests in total have arrived (rejects after timeoutMs). */
  async waitFor(count: number, timeoutMs = 15_000): Promise<ReceivedRequest[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests.length < count) {
      if (Date.now() > deadline)
        throw new Error(
          `expected ${count} requests within ${timeoutMs} ms, got ${this.requests.length}`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.requests;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      const answer = this.answers.shift() ?? this.fallback;
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status, { 'content-type': 'text/plain', ...(answer.headers ?? {}) });
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  }
}

export async function startHttpReceiver(): Promise<HttpReceiver> {
  return new HttpReceiver().start();
}
