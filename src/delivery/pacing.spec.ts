import { MIN_GROUP_RATE } from '../config/config';
import { currentRate, halvedRate, isDeferral, isNewCongestionSignal } from './pacing';

describe('pacing arithmetic (AIMD)', () => {
  const minute = 60_000;
  const t0 = 1_800_000_000_000;

  it('uses the configured rate until the group defers', () => {
    expect(currentRate({ rate: null, decreasedAt: 0, deferredAt: 0 }, 10, minute, t0)).toBe(10);
  });

  it('halves on a deferral, never below one message per 10 s', () => {
    expect(halvedRate(10)).toBe(5);
    expect(halvedRate(0.15)).toBe(MIN_GROUP_RATE);
    let rate = 20;
    for (let i = 0; i < 20; i++) rate = halvedRate(rate);
    expect(rate).toBe(0.1);
  });

  it('keeps the lowered rate for a minute without deferrals, then adds a tenth of the configured rate per minute', () => {
    const state = { rate: 2.5, decreasedAt: t0, deferredAt: t0 };
    expect(currentRate(state, 10, minute, t0 + 30_000)).toBe(2.5);
    expect(currentRate(state, 10, minute, t0 + minute)).toBe(2.5);
    expect(currentRate(state, 10, minute, t0 + 2 * minute)).toBeCloseTo(3.5);
    expect(currentRate(state, 10, minute, t0 + 2.5 * minute)).toBeCloseTo(4);
    expect(currentRate(state, 10, minute, t0 + 9 * minute)).toBeCloseTo(10);
    // Never past the configured rate.
    expect(currentRate(state, 10, minute, t0 + 60 * minute)).toBe(10);
    // A later deferral restarts the quiet minute.
    expect(
      currentRate({ ...state, deferredAt: t0 + 5 * minute }, 10, minute, t0 + 5.5 * minute),
    ).toBe(2.5);
  });

  it('counts deferrals within a second of the last decrease, or of mail sent before it, as the same signal', () => {
    const state = { rate: 5, decreasedAt: t0, deferredAt: t0 };
    expect(isNewCongestionSignal(state, t0 + 100, t0 + 500)).toBe(false);
    expect(isNewCongestionSignal(state, t0 - 200, t0 + 1500)).toBe(false);
    expect(isNewCongestionSignal(state, t0 + 100, t0 + 1500)).toBe(true);
    expect(isNewCongestionSignal({ rate: null, decreasedAt: 0, deferredAt: 0 }, t0, t0)).toBe(true);
  });

  it('recognises deferrals: 421, 451 and enhanced status 4.7.x', () => {
    expect(isDeferral({ responseCode: 421, response: '421 4.7.28 rate limited' })).toBe(true);
    expect(isDeferral({ responseCode: 451, response: '451 Try again later' })).toBe(true);
    expect(isDeferral({ responseCode: 450, response: '450 4.7.1 Client host rejected' })).toBe(
      true,
    );
    expect(isDeferral({ responseCode: 452, response: '452-4.7.500 Server busy' })).toBe(true);
    expect(isDeferral({ responseCode: 450, response: '450 4.2.1 Mailbox busy' })).toBe(false);
    expect(isDeferral({ responseCode: 452, response: '452 Insufficient storage' })).toBe(false);
    expect(isDeferral({ responseCode: 550, response: '550 5.7.1 rejected' })).toBe(false);
    expect(isDeferral({ code: 'ECONNREFUSED' })).toBe(false);
    expect(isDeferral(undefined)).toBe(false);
  });
});
