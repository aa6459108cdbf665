import { MIN_GROUP_RATE } from '../config/config';

/**
 * The AIMD arithmetic of a provider group's rate (contract: "Pacing per
 * mailbox provider"). The Lua scripts of DeliveryPacer apply the same rules
 * atomically in Redis; these functions are their reference and compute the
 * current rate that GET /metrics shows from the stored state.
 */

/** What Redis keeps per group; times in ms since the epoch, 0 for never. */
export interface GroupPaceState {
  /** The rate set by the last deferral (msgs/s); null: never deferred, the configured rate applies. */
  rate: number | null;
  /** When the rate was last halved. */
  decreasedAt: number;
  /** When the group last deferred a message. */
  deferredAt: number;
}

/** One congestion signal per second at most. */
export const DECREASE_INTERVAL_MS = 1000;

/**
 * The rate now: the stored rate until `recoveryMs` pass without a deferral,
 * then growing by a tenth of the configured rate per `recoveryMs`, never above
 * the configured rate.
 */
export function currentRate(
  state: GroupPaceState,
  configured: number,
  recoveryMs: number,
  now: number,
): number {
  if (state.rate === null) return configured;
  const quiet = now - state.deferredAt;
  const grown =
    quiet > recoveryMs
      ? state.rate + ((configured / 10) * (quiet - recoveryMs)) / recoveryMs
      : state.rate;
  return Math.min(configured, grown);
}

/**
 * Whether a deferral halves the rate: not within a second of the last
 * decrease, and not for a message that was already on its way when the rate
 * last fell (the deferrals of messages in flight are one signal).
 */
export function isNewCongestionSignal(state: GroupPaceState, sentAt: number, now: number): boolean {
  return now - state.decreasedAt >= DECREASE_INTERVAL_MS && sentAt >= state.decreasedAt;
}

/** Multiplicative decrease: half, never below one message per 10 s. */
export function halvedRate(rate: number): number {
  return Math.max(MIN_GROUP_RATE, rate / 2);
}

/**
 * A receiving server asking us to slow down: reply 421 or 451, or an enhanced
 * status 4.7.x (e.g. Gmail's `421 4.7.28`, Microsoft's `451 4.7.500`).
 */
export function isDeferral(error: unknown): boolean {
  const e = error as { responseCode?: unknown; response?: unknown };
  const code = typeof e?.responseCode === 'number' ? e.responseCode : null;
  if (code === 421 || code === 451) return true;
  if (code !== null && (code < 400 || code >= 500)) return false;
  return typeof e?.response === 'string' && /^4\d\d[ -]4\.7\.\d{1,3}\b/.test(e.response);
}
