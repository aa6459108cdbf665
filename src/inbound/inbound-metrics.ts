import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { AppMetrics, METRICS_REGISTRY } from '../common/metrics/metrics';

/** What became of a message offered to the listener, or of a stored one once processed. */
export type InboundOutcome =
  | 'refused_recipient'
  | 'refused_size'
  | 'stored'
  | 'processed'
  | 'unmatched'
  | 'ignored'
  | 'failed';

/** `mailwright_inbound_messages_total{outcome}`, counted by the process that saw it. */
@Injectable()
export class InboundMetrics {
  private readonly messages: Counter<'outcome'>;

  constructor(@Inject(METRICS_REGISTRY) metrics: AppMetrics) {
    this.messages = new Counter({
      name: 'mailwright_inbound_messages_total',
      help: 'Inbound SMTP/LMTP messages by outcome: refused (recipient, size) and stored by the listener; processed, unmatched, ignored or failed by the worker',
      labelNames: ['outcome'],
      registers: [metrics.registry],
    });
  }

  count(outcome: InboundOutcome): void {
    this.messages.inc({ outcome });
  }
}
