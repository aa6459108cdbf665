import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { RefusedTargetError, sendOutbound } from '../common/http/outbound-http';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import type { EventRow } from '../events/event.row';
import { EventsService } from '../events/events.service';
import { WebhookDeliveryStatus } from './webhook-delivery.entity';
import { EndpointSlots } from './endpoint-slots';
import { endpointUrlAad, maskCredentials } from './url-credentials';
import { WebhookDispatcher } from './webhook-dispatcher';
import { signWebhook } from './webhook-signature';
import { WEBHOOK_SECRET_BOX } from './webhooks.constants';
import { AttemptOutcome, ClaimedDelivery, WebhooksRepository } from './webhooks.repository';

/** Per attempt: connect to last byte. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/**
 * Attempts in flight to one endpoint, all worker processes together (the
 * contract's limit; EndpointSlots keeps the count in Redis): a slow receiver
 * holds at most this many attempts, wherever they run.
 */
export const PER_ENDPOINT_IN_FLIGHT = 4;
/** Attempts in flight per worker process, all endpoints together. */
export const WEBHOOK_CONCURRENCY = 64;
/** An endpoint whose every attempt has failed this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 3600 * 1000;
/**
 * How long a claimed delivery is held by its worker. A claimed row whose
 * attempt could not end within the lease (it waited behind slow attempts) is
 * not started but left to lapse (see LEASE_MARGIN_MS). A worker that dies
 * leaves its claimed rows to the dispatch sweep after it.
 */
export const CLAIM_LEASE_MS = 30_000;
/** Started only with this much of its lease left: the attempt (10 s) and its recording. */
const LEASE_MARGIN_MS = WEBHOOK_TIMEOUT_MS + 5_000;
/**
 * An endpoint slot's lease: longer than any attempt (10 s, then its recording),
 * so only a worker that died leaves a slot taken, and then only this long.
 */
export const SLOT_LEASE_MS = 30_000;
/** A drain whose endpoint has every slot taken elsewhere: how soon its parked deliveries are looked at again. */
const PARKED_FOR_MS = 1_000;
/** A drain with attempts of its own in flight but no free slot asks again this often. */
const SLOT_RETRY_MS = 250;
/**
 * A drain that found no more due rows while attempts of its own run (a slow
 * endpoint's last for up to 10 s) and has room for more looks again this
 * often: the wake-up of a row committed meanwhile waits for the drain's job
 * to end (webhookWakeDedupId), which would hold that row behind them.
 */
const LOOK_AGAIN_MS = 500;
/**
 * Claimed deliveries waiting for a slot, per endpoint: the next attempts
 * start without a round trip, and a claim is one statement for many rows
 * (bench:webhooks: per-statement costs, in Postgres and in the client's
 * socket writes, were most of the database's share). That many only for an
 * endpoint that answers fast (FAST_ANSWER_MS on average); for a slow one (or
 * one not heard from yet) one wave, so no claimed row waits behind more
 * than one round of attempts and its lease holds.
 */
const CLAIM_AHEAD = 8 * PER_ENDPOINT_IN_FLIGHT;
const CLAIM_AHEAD_SLOW = PER_ENDPOINT_IN_FLIGHT;
const FAST_ANSWER_MS = 500;
/** Outcomes recorded together: at least this many, or whatever waited FLUSH_AFTER_MS, or all when nothing else is in flight. */
const FLUSH_AT = 96;
const FLUSH_AFTER_MS = 20;
const RESPONSE_BYTES = 1024;

interface Result {
  row: ClaimedDelivery;
  outcome: AttemptOutcome;
  at: number;
}

/** One endpoint being drained by this process. */
interface Drain {
  /** A job asked for a (new) look at the endpoint's due deliveries. */
  again: boolean;
  /** The last claim got fewer rows than it asked for. */
  exhausted: boolean;
  claimed: ClaimedDelivery[];
  /** Endpoint slots taken and not yet used by an attempt. */
  tokens: string[];
  acquiring: boolean;
  /** The last ask for slots got none: no claim and no ask until an attempt ends or SLOT_RETRY_MS passes. */
  blocked: boolean;
  /** When the oldest claims' leases end, by claim: [until, rows left of that claim]. */
  leases: Array<[number, number]>;
  inFlight: number;
  results: Result[];
  claiming: boolean;
  flushing: boolean;
  error: unknown;
  sent: number;
  wake: (() => void) | null;
  signalled: boolean;
  timer: NodeJS.Timeout | null;
  /** Set while the drain, out of due rows but with room for more attempts, waits to look again (LOOK_AGAIN_MS). */
  lookAgain: NodeJS.Timeout | null;
  /** Moving average of this drain's attempt durations; null before the first. */
  averageMs: number | null;
}

/**
 * Drains an endpoint's due deliveries: claims them in batches (one
 * statement, `FOR UPDATE SKIP LOCKED`, a lease in leased_until), starts an
 * attempt only with one of the endpoint's PER_ENDPOINT_IN_FLIGHT slots
 * (EndpointSlots: counted in Redis across workers, WEBHOOK_CONCURRENCY in the
 * process), and records the outcomes in one statement per batch with
 * the endpoint's failing streak. Each attempt is the Standard Webhooks
 * request (webhook-id = delivery id, the same on every attempt;
 * webhook-timestamp = now; the signature over `id.timestamp.body`), 10 s
 * timeout, the SSRF guard, recorded under the attempt count and manual
 * retries it started from (a duplicate attempt of a killed worker records
 * nothing twice). A non-2xx answer or a network error schedules the next
 * attempt (WEBHOOK_RETRY_DELAYS_MS) with its own delayed job; after the last,
 * FAILED. A refused target fails at once. One drain per endpoint per
 * process: a job for an endpoint already draining here only tells it to look again.
 * A drain that gets no slot while nothing of its own is in flight (other
 * workers hold them all) parks: it gives its claimed rows back (no attempt
 * counted) and ends, leaving a delayed job to look again, so waiting for a
 * slow endpoint never holds a job slot.
 */
@Injectable()
export class WebhookSender implements OnModuleDestroy {
  private readonly logger = new Logger(WebhookSender.name);
  private readonly drains = new Map<string, Drain>();
  /** Opened signing secrets by endpoint, with the sealed form they came from (a rotated secret is a new sealed form). */
  private readonly secrets = new Map<string, { sealed: string; secret: string }>();
  /** Opened URLs (with their credentials) by endpoint, with the sealed form they came from. */
  private readonly urls = new Map<string, { sealed: string; url: string }>();
  private inFlight = 0;
  private stopping = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(WEBHOOK_SECRET_BOX) private readonly box: SecretBox,
    private readonly repository: WebhooksRepository,
    private readonly dispatcher: WebhookDispatcher,
    private readonly events: EventsService,
    private readonly slots: EndpointSlots,
  ) {}

  /** Shutting down: drains claim nothing more, finish and record what is in flight. */
  onModuleDestroy(): void {
    this.stopping = true;
    for (const d of this.drains.values()) signal(d);
  }

  /** Sends the endpoint's due deliveries until none is left; answers how many attempts this call made. */
  async drain(endpointId: string): Promise<{ attempts: number; joined?: true; parked?: true }> {
    const running = this.drains.get(endpointId);
    if (running) {
      running.again = true;
      signal(running);
      return { attempts: 0, joined: true };
    }
    // Every slot is taken by other workers: claim nothing, look again later without holding this job slot.
    if ((await this.slots.free(endpointId, PER_ENDPOINT_IN_FLIGHT, SLOT_LEASE_MS)) === 0) {
      await this.dispatcher.wakeLater(endpointId, PARKED_FOR_MS);
      return { attempts: 0, parked: true };
    }
    const d: Drain = {
      again: true,
      exhausted: false,
      claimed: [],
      tokens: [],
      acquiring: false,
      blocked: false,
      leases: [],
      inFlight: 0,
      results: [],
      claiming: false,
      flushing: false,
      error: null,
      sent: 0,
      wake: null,
      signalled: false,
      timer: null,
      lookAgain: null,
      averageMs: null,
    };
    this.drains.set(endpointId, d);
    try {
      const parked = await this.run(endpointId, d);
      return parked ? { attempts: d.sent, parked: true } : { attempts: d.sent };
    } finally {
      if (d.timer) clearTimeout(d.timer);
      if (d.lookAgain) clearTimeout(d.lookAgain);
      this.drains.delete(endpointId);
      await this.slots.release(endpointId, d.tokens.splice(0)).catch(() => undefined);
    }
  }

  /** Answers true when the drain parked: other workers hold every slot of the endpoint. */
  private async run(endpointId: string, d: Drain): Promise<boolean> {
    for (;;) {
      const failed = d.error !== null || this.stopping;
      if (!failed) {
        while (d.claimed.length > 0 && d.tokens.length > 0) {
          const row = d.claimed.shift() as ClaimedDelivery;
          const lease = d.leases[0];
          if (--lease[1] === 0) d.leases.shift();
          // Waited too long behind slow attempts: the lease lapses and the sweep wakes the endpoint again.
          if (Date.now() + LEASE_MARGIN_MS > lease[0]) continue;
          this.start(endpointId, d, row, d.tokens.pop() as string);
        }
        const room = Math.min(
          d.claimed.length,
          PER_ENDPOINT_IN_FLIGHT - d.inFlight - d.tokens.length,
          WEBHOOK_CONCURRENCY - this.inFlight,
        );
        if (room > 0 && !d.acquiring && !d.blocked) this.acquire(endpointId, d, room);
      }
      // Slots unused (rows skipped, or none left): free them at once for the other workers.
      if (d.tokens.length > 0 && (d.claimed.length === 0 || failed) && !d.acquiring)
        this.release(endpointId, d.tokens.splice(0));
      const ahead =
        d.averageMs !== null && d.averageMs < FAST_ANSWER_MS ? CLAIM_AHEAD : CLAIM_AHEAD_SLOW;
      const want = PER_ENDPOINT_IN_FLIGHT + ahead - d.inFlight - d.claimed.length;
      const mayClaim =
        !failed && !d.claiming && !d.blocked && (d.again || !d.exhausted) && want > 0;
      const flushDue =
        !d.flushing &&
        d.results.length > 0 &&
        (d.results.length >= FLUSH_AT ||
          d.inFlight === 0 ||
          failed ||
          Date.now() - d.results[0].at >= FLUSH_AFTER_MS);
      // The next claim rides on the recording's statement; alone only when the next wave is short of rows.
      if (flushDue) this.flush(endpointId, d, mayClaim ? want : 0);
      else if (mayClaim && d.claimed.length < PER_ENDPOINT_IN_FLIGHT)
        this.flushOrClaim(endpointId, d, [], want);
      if (!d.flushing && d.results.length > 0 && !d.timer)
        d.timer = setTimeout(() => ((d.timer = null), signal(d)), FLUSH_AFTER_MS);
      if (
        !failed &&
        d.exhausted &&
        !d.again &&
        !d.lookAgain &&
        d.inFlight > 0 &&
        d.inFlight + d.claimed.length < PER_ENDPOINT_IN_FLIGHT
      )
        d.lookAgain = setTimeout(() => {
          d.lookAgain = null;
          d.again = true;
          signal(d);
        }, LOOK_AGAIN_MS);
      const quiet =
        !d.claiming && !d.flushing && !d.acquiring && d.inFlight === 0 && d.results.length === 0;
      if (quiet && failed) {
        if (d.error !== null) throw d.error;
        return false; // stopping: what was claimed and not sent comes back after its lease
      }
      if (quiet && d.claimed.length === 0 && d.exhausted && !d.again) return false;
      if (quiet && d.blocked) {
        // Nothing of ours in flight and no slot free: give the claimed rows back and wait in a delayed job, not here.
        await this.repository.releaseClaims(this.dataSource.manager, d.claimed.splice(0));
        d.leases.length = 0;
        await this.dispatcher.wakeLater(endpointId, PARKED_FOR_MS);
        return true;
      }
      await wait(d);
    }
  }

  private acquire(endpointId: string, d: Drain, room: number): void {
    d.acquiring = true;
    this.slots
      .acquire(endpointId, PER_ENDPOINT_IN_FLIGHT, room, SLOT_LEASE_MS)
      .then(
        (tokens) => {
          d.tokens.push(...tokens);
          if (tokens.length === 0) {
            d.blocked = true;
            // Attempts of ours in flight unblock the drain when they end; this covers slots freed elsewhere.
            if (d.inFlight > 0) setTimeout(() => ((d.blocked = false), signal(d)), SLOT_RETRY_MS);
          }
        },
        (error) => {
          d.error ??= error;
        },
      )
      .finally(() => {
        d.acquiring = false;
        signal(d);
      });
  }

  private release(endpointId: string, tokens: string[]): void {
    this.slots
      .release(endpointId, tokens)
      .catch((error) =>
        this.logger.warn({ err: error, endpointId }, 'could not free webhook slots; they lapse'),
      );
  }

  private start(endpointId: string, d: Drain, row: ClaimedDelivery, token: string): void {
    d.inFlight++;
    this.inFlight++;
    d.sent++;
    const startedAt = Date.now();
    (row.enabled ? this.attempt(row) : Promise.resolve(final('endpoint is disabled')))
      .then(
        (outcome) => {
          const at = Date.now();
          d.averageMs =
            d.averageMs === null ? at - startedAt : 0.9 * d.averageMs + 0.1 * (at - startedAt);
          d.results.push({ row, outcome, at });
        },
        (error) =>
          this.logger.error(
            { err: error, deliveryId: row.id },
            'webhook attempt crashed; the sweep sends it again after the lease',
          ),
      )
      .finally(() => {
        this.release(endpointId, [token]);
        d.inFlight--;
        this.inFlight--;
        d.blocked = false;
        signal(d);
        // A slot of the process is free: a drain waiting for one can go on.
        if (this.inFlight === WEBHOOK_CONCURRENCY - 1)
          for (const other of this.drains.values()) if (other !== d) signal(other);
      });
  }

  private flush(endpointId: string, d: Drain, want: number): void {
    this.flushOrClaim(endpointId, d, d.results.splice(0), want);
  }

  /** Records `batch` (if any) and claims up to `want` more rows (if any), in one statement. */
  private flushOrClaim(endpointId: string, d: Drain, batch: Result[], want: number): void {
    if (batch.length > 0) d.flushing = true;
    if (want > 0) {
      d.claiming = true;
      d.again = false;
    }
    const until = Date.now() + CLAIM_LEASE_MS;
    this.recordAndClaim(endpointId, batch, want)
      .then(
        (claimed) => {
          if (want === 0) return;
          d.claimed.push(...claimed);
          if (claimed.length > 0) d.leases.push([until, claimed.length]);
          d.exhausted = claimed.length < want;
        },
        (error) => {
          d.error ??= error;
        },
      )
      .finally(() => {
        if (batch.length > 0) d.flushing = false;
        if (want > 0) d.claiming = false;
        signal(d);
      });
  }

  /**
   * One statement for the batch and the next claim; then the next attempts'
   * jobs and, rarely, the endpoint's disabling. Answers the rows claimed.
   */
  private async recordAndClaim(
    endpointId: string,
    batch: Result[],
    want: number,
  ): Promise<ClaimedDelivery[]> {
    const enabled = batch.some((r) => r.row.enabled);
    const { rows, failingSince, claimed } = await this.repository.recordAndClaim(
      this.dataSource.manager,
      endpointId,
      enabled,
      batch.map((r) => ({
        id: r.row.id,
        attempts: r.row.attempts,
        retries: r.row.retries,
        outcome: r.outcome,
      })),
      want,
      CLAIM_LEASE_MS,
    );
    const retrying = rows.filter((r) => r.status === WebhookDeliveryStatus.PENDING);
    if (retrying.length > 0) await this.dispatcher.enqueue(retrying);
    if (
      enabled &&
      failingSince &&
      Date.now() - failingSince.getTime() >= DISABLE_AFTER_FAILING_MS
    ) {
      await this.disable(batch[0].row, failingSince);
    }
    return claimed;
  }

  private async disable(
    endpoint: { projectId: string; endpointId: string; url: string },
    failingSince: Date,
  ): Promise<void> {
    const reason = `every delivery failed since ${failingSince.toISOString()}`;
    const disabled = await this.dataSource.transaction(
      async (manager): Promise<EventRow | null> => {
        if (
          !(await this.repository.disableEndpoint(
            manager,
            endpoint.endpointId,
            reason,
            DISABLE_AFTER_FAILING_MS,
          ))
        )
          return null;
        return this.events.record(manager, {
          projectId: endpoint.projectId,
          contactId: null,
          name: 'webhook.disabled',
          data: { endpointId: endpoint.endpointId, url: maskCredentials(endpoint.url), reason },
        });
      },
    );
    if (disabled) {
      this.dispatcher.invalidate(endpoint.projectId);
      await this.events.publish([{ ...disabled, email: null }]);
    }
  }

  private secretOf(delivery: ClaimedDelivery): string {
    const cached = this.secrets.get(delivery.endpointId);
    if (cached && cached.sealed === delivery.secretSealed) return cached.secret;
    const secret = this.box.openString(
      Buffer.from(delivery.secretSealed, 'base64'),
      delivery.endpointId,
    );
    this.secrets.set(delivery.endpointId, { sealed: delivery.secretSealed, secret });
    return secret;
  }

  /** The URL to call: `url`, or the sealed one with its credentials (`url` shows them as `***`). */
  private urlOf(delivery: ClaimedDelivery): string {
    if (delivery.urlSealed === null) return delivery.url;
    const cached = this.urls.get(delivery.endpointId);
    if (cached && cached.sealed === delivery.urlSealed) return cached.url;
    const url = this.box.openString(
      Buffer.from(delivery.urlSealed, 'base64'),
      endpointUrlAad(delivery.endpointId),
    );
    this.urls.set(delivery.endpointId, { sealed: delivery.urlSealed, url });
    return url;
  }

  private async attempt(delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    let secret: string;
    let url: string;
    try {
      secret = this.secretOf(delivery);
    } catch {
      return final(
        'the signing secret opens with neither APP_SECRET nor APP_SECRET_PREVIOUS: rotate the endpoint secret',
      );
    }
    try {
      url = this.urlOf(delivery);
    } catch {
      return final(
        "the URL's credentials open with neither APP_SECRET nor APP_SECRET_PREVIOUS: PATCH the endpoint's url with them",
      );
    }
    const timestamp = Math.floor(Date.now() / 1000);
    const attemptsAfter = delivery.attempts + 1;
    const retry = (responseStatus: number | null, lastError: string): AttemptOutcome => {
      const wait = this.config.webhookRetryDelaysMs[attemptsAfter - 1];
      return wait === undefined
        ? { status: WebhookDeliveryStatus.FAILED, responseStatus, lastError, nextAttemptAt: null }
        : {
            status: WebhookDeliveryStatus.PENDING,
            responseStatus,
            lastError,
            nextAttemptAt: new Date(Date.now() + wait),
          };
    };
    try {
      const res = await sendOutbound({
        url,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Mailwright-Webhooks/1',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(secret, delivery.id, timestamp, delivery.payload),
        },
        body: delivery.payload,
        timeoutMs: WEBHOOK_TIMEOUT_MS,
        allowPrivate: this.config.webhookAllowPrivate,
        maxBodyBytes: RESPONSE_BYTES,
      });
      if (res.status >= 200 && res.status < 300) {
        return {
          status: WebhookDeliveryStatus.SUCCEEDED,
          responseStatus: res.status,
          lastError: null,
          nextAttemptAt: null,
        };
      }
      return retry(res.status, res.body);
    } catch (error) {
      if (error instanceof RefusedTargetError) return final(`refused: ${error.message}`);
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.logger.debug({ deliveryId: delivery.id, err: message }, 'webhook attempt failed');
      return retry(null, message.slice(0, RESPONSE_BYTES));
    }
  }
}

function final(lastError: string): AttemptOutcome {
  return {
    status: WebhookDeliveryStatus.FAILED,
    responseStatus: null,
    lastError,
    nextAttemptAt: null,
  };
}

function signal(d: Drain): void {
  const wake = d.wake;
  if (wake) {
    d.wake = null;
    wake();
  } else d.signalled = true;
}

function wait(d: Drain): Promise<void> {
  if (d.signalled) {
    d.signalled = false;
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    d.wake = resolve;
  });
}
