import { sleep } from './run';

export interface SendLoadOptions {
  /** The API's base URL (the same port across restarts of the API process). */
  base: string;
  key: string;
  requests: number;
  recipientsPerRequest: number;
  /** The address of recipient `n` (0-based, over the whole load): one distinct address per email. */
  address: (n: number) => string;
  from: string;
  concurrency: number;
  /** Each client starts a request at most this often: spreads the load over time. 0: as fast as answered. */
  pacingMs: number;
  /** Each request's Idempotency-Key is `<keyPrefix>-<i>`. */
  keyPrefix: string;
  /** Give up on requests still unanswered this long after start(). */
  deadlineMs: number;
}

/**
 * Transactional mail as a careful client sends it: `POST /v1/send` with
 * several recipients and an Idempotency-Key per request, retried with the
 * same key on a connection error, a 5xx or a 429 until it is answered 200.
 * So a fault may delay a send but must never lose or double it: the emails
 * of every 200 are the whole set of records the API may create.
 */
export class SendLoad {
  /** Requests answered 200. */
  answered = 0;
  /** Requests on the wire right now. */
  inFlight = 0;
  /** Failed tries that were retried, by HTTP status or error name. */
  readonly retried = new Map<string, number>();
  /** Answers a careful client does not retry (4xx other than 429): each is a failure of the test. */
  readonly unexpected: string[] = [];
  /** Email ids of every 200. */
  readonly emailIds = new Set<string>();
  finished: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly options: SendLoadOptions) {}

  start(): void {
    const deadline = Date.now() + this.options.deadlineMs;
    let next = 0;
    const client = async (): Promise<void> => {
      for (;;) {
        const i = next++;
        if (i >= this.options.requests || this.stopped) return;
        const began = Date.now();
        await this.sendOne(i, deadline);
        const wait = this.options.pacingMs - (Date.now() - began);
        if (wait > 0) await sleep(wait);
      }
    };
    this.finished = Promise.all(Array.from({ length: this.options.concurrency }, client)).then(
      () => undefined,
    );
  }

  stop(): void {
    this.stopped = true;
  }

  private body(i: number): unknown {
    const { recipientsPerRequest, address } = this.options;
    return {
      to: Array.from({ length: recipientsPerRequest }, (_, r) =>
        address(i * recipientsPerRequest + r),
      ),
      from: this.options.from,
      subject: 'Order {{ order }}',
      body: '<p>Your order {{ order }} ships today.</p>',
      data: { order: `A-${i}` },
    };
  }

  private async sendOne(i: number, deadline: number): Promise<void> {
    const payload = JSON.stringify(this.body(i));
    while (!this.stopped && Date.now() < deadline) {
      this.inFlight++;
      let outcome: string;
      try {
        const res = await fetch(`${this.options.base}/v1/send`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${this.options.key}`,
            'content-type': 'application/json',
            'idempotency-key': `${this.options.keyPrefix}-${i}`,
          },
          body: payload,
          signal: AbortSignal.timeout(60_000),
        });
        const text = await res.text();
        if (res.status === 200) {
          const emails = (JSON.parse(text) as { data: { emails: Array<{ id: string }> } }).data
            .emails;
          for (const email of emails) this.emailIds.add(email.id);
          this.answered++;
          return;
        }
        if (res.status < 500 && res.status !== 429) {
          this.unexpected.push(`request ${i}: ${res.status} ${text.slice(0, 500)}`);
          return;
        }
        outcome = String(res.status);
      } catch (error) {
        outcome = (error as Error).name === 'TimeoutError' ? 'timeout' : 'connection';
      } finally {
        this.inFlight--;
      }
      this.retried.set(outcome, (this.retried.get(outcome) ?? 0) + 1);
      await sleep(250);
    }
  }
}
