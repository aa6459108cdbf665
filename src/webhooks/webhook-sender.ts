import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { RefusedTargetError, sendOutbound } from '../common/http/outbound-http';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import type { EventRow } from '../events/event.row';
import { EventsService } from '../events/events.service';
import { WebhookDeliveryStatus } from './webhook-delivery.entity';
import { WebhookDispatcher } from './webhook-dispatcher';
import { signWebhook } from './webhook-signature';
import { WEBHOOK_SECRET_BOX } from './webhooks.constants';
import { AttemptOutcome, WebhooksRepository } from './webhooks.repository';

/** Per attempt: connect to last byte. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** Attempts in flight to one endpoint from one worker process: a slow receiver holds at most this many slots. */
export const PER_ENDPOINT_IN_FLIGHT = 16;
/** An endpoint whose every attempt has failed this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 3600 * 1000;
const RESPONSE_BYTES = 1024;

export type SendOutcome = 'succeeded' | 'retrying' | 'failed' | 'skipped' | 'busy';

/**
 * One attempt of one delivery: the Standard Webhooks request (webhook-id =
 * delivery id, the same on every attempt; webhook-timestamp = now; the
 * signature over `id.timestamp.body`), 10 s timeout, the SSRF guard, then
 * the outcome recorded under the attempt count it started from (a duplicate
 * attempt of a killed worker records nothing twice). A non-2xx answer or a
 * network error schedules the next attempt (WEBHOOK_RETRY_DELAYS_MS); after
 * the last, FAILED. A refused target fails at once.
 */
@Injectable()
export class WebhookSender {
  private readonly logger = new Logger(WebhookSender.name);
  private readonly inFlight = new Map<string, number>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(WEBHOOK_SECRET_BOX) private readonly box: SecretBox,
    private readonly repository: WebhooksRepository,
    private readonly dispatcher: WebhookDispatcher,
    private readonly events: EventsService,
  ) {}

  /** Whether this process already has enough attempts in flight to the endpoint. */
  busy(endpointId: string): boolean {
    return (this.inFlight.get(endpointId) ?? 0) >= PER_ENDPOINT_IN_FLIGHT;
  }

  async deliver(deliveryId: string): Promise<SendOutcome> {
    const delivery = await this.repository.loadForSend(this.dataSource.manager, deliveryId);
    if (!delivery || delivery.status !== WebhookDeliveryStatus.PENDING) return 'skipped';
    if (this.busy(delivery.endpointId)) return 'busy';
    this.inFlight.set(delivery.endpointId, (this.inFlight.get(delivery.endpointId) ?? 0) + 1);
    let outcome: AttemptOutcome;
    try {
      outcome = delivery.enabled ? await this.attempt(delivery) : final('endpoint is disabled');
    } finally {
      const left = (this.inFlight.get(delivery.endpointId) ?? 1) - 1;
      if (left > 0) this.inFlight.set(delivery.endpointId, left);
      else this.inFlight.delete(delivery.endpointId);
    }
    const { row, disabled } = await this.dataSource.transaction(async (manager) => {
      const row = await this.repository.recordAttempt(manager, delivery.id, delivery.attempts, outcome);
      if (!row) return { row: null, disabled: null };
      if (outcome.status === WebhookDeliveryStatus.SUCCEEDED) {
        await this.repository.endpointSucceeded(manager, delivery.endpointId);
        return { row, disabled: null };
      }
      if (!delivery.enabled) return { row, disabled: null };
      const failingSince = await this.repository.endpointFailed(manager, delivery.endpointId);
      if (!failingSince || Date.now() - failingSince.getTime() < DISABLE_AFTER_FAILING_MS) return { row, disabled: null };
      const reason = `every delivery failed since ${failingSince.toISOString()}`;
      if (!(await this.repository.disableEndpoint(manager, delivery.endpointId, reason))) return { row, disabled: null };
      const event: EventRow = await this.events.record(manager, {
        projectId: delivery.projectId,
        contactId: null,
        name: 'webhook.disabled',
        data: { endpointId: delivery.endpointId, url: delivery.url, reason },
      });
      return { row, disabled: event };
    });
    if (disabled) {
      this.dispatcher.invalidate(delivery.projectId);
      await this.events.publish([{ ...disabled, email: null }]);
    }
    if (!row) return 'skipped';
    if (outcome.status === WebhookDeliveryStatus.PENDING) {
      await this.dispatcher.enqueue([row]);
      return 'retrying';
    }
    return outcome.status === WebhookDeliveryStatus.SUCCEEDED ? 'succeeded' : 'failed';
  }

  private async attempt(delivery: { id: string; endpointId: string; url: string; payload: string; secretSealed: string; attempts: number }): Promise<AttemptOutcome> {
    let secret: string;
    try {
      secret = this.box.openString(Buffer.from(delivery.secretSealed, 'base64'), delivery.endpointId);
    } catch {
      return final('the signing secret opens with neither APP_SECRET nor APP_SECRET_PREVIOUS: rotate the endpoint secret');
    }
    const timestamp = Math.floor(Date.now() / 1000);
    const attemptsAfter = delivery.attempts + 1;
    const retry = (responseStatus: number | null, lastError: string): AttemptOutcome => {
      const wait = this.config.webhookRetryDelaysMs[attemptsAfter - 1];
      return wait === undefined
        ? { status: WebhookDeliveryStatus.FAILED, responseStatus, lastError, nextAttemptAt: null }
        : { status: WebhookDeliveryStatus.PENDING, responseStatus, lastError, nextAttemptAt: new Date(Date.now() + wait) };
    };
    try {
      const res = await sendOutbound({
        url: delivery.url,
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
        return { status: WebhookDeliveryStatus.SUCCEEDED, responseStatus: res.status, lastError: null, nextAttemptAt: null };
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
  return { status: WebhookDeliveryStatus.FAILED, responseStatus: null, lastError, nextAttemptAt: null };
}
