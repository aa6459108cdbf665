import { SendingStatus } from '../projects/project.entity';

/** Contract "Sender health": the window and thresholds. */
export const HEALTH_WINDOW_DAYS = 7;
export const HEALTH_MIN_SENT = 100;
export const WARNING_BOUNCE_RATE = 0.05;
export const WARNING_COMPLAINT_RATE = 0.001;
export const PAUSED_BOUNCE_RATE = 0.1;
export const PAUSED_COMPLAINT_RATE = 0.003;
export const PAUSED_MIN_BOUNCES = 10;
export const PAUSED_MIN_COMPLAINTS = 5;

export interface HealthCounts {
  sent: number;
  bounced: number;
  complained: number;
}

export interface HealthVerdict {
  status: SendingStatus;
  /** Which rate crossed which threshold; null when HEALTHY. */
  reason: string | null;
  bounceRate: number;
  complaintRate: number;
}

export function rates(counts: HealthCounts): { bounceRate: number; complaintRate: number } {
  const over = (n: number) => (counts.sent > 0 ? Math.min(1, n / counts.sent) : 0);
  return { bounceRate: over(counts.bounced), complaintRate: over(counts.complained) };
}

/** The status the counts call for (PAUSED is then kept by the caller until an operator resumes). */
export function judge(counts: HealthCounts): HealthVerdict {
  const { bounceRate, complaintRate } = rates(counts);
  const verdict = (status: SendingStatus, reason: string | null): HealthVerdict => ({
    status,
    reason,
    bounceRate,
    complaintRate,
  });
  if (counts.sent < HEALTH_MIN_SENT) return verdict(SendingStatus.HEALTHY, null);
  const percent = (rate: number) => `${(rate * 100).toFixed(2)}%`;
  if (bounceRate >= PAUSED_BOUNCE_RATE && counts.bounced >= PAUSED_MIN_BOUNCES)
    return verdict(
      SendingStatus.PAUSED,
      `bounce rate ${percent(bounceRate)} ≥ ${percent(PAUSED_BOUNCE_RATE)}`,
    );
  if (complaintRate >= PAUSED_COMPLAINT_RATE && counts.complained >= PAUSED_MIN_COMPLAINTS)
    return verdict(
      SendingStatus.PAUSED,
      `complaint rate ${percent(complaintRate)} ≥ ${percent(PAUSED_COMPLAINT_RATE)}`,
    );
  if (bounceRate >= WARNING_BOUNCE_RATE)
    return verdict(
      SendingStatus.WARNING,
      `bounce rate ${percent(bounceRate)} ≥ ${percent(WARNING_BOUNCE_RATE)}`,
    );
  if (complaintRate >= WARNING_COMPLAINT_RATE)
    return verdict(
      SendingStatus.WARNING,
      `complaint rate ${percent(complaintRate)} ≥ ${percent(WARNING_COMPLAINT_RATE)}`,
    );
  return verdict(SendingStatus.HEALTHY, null);
}
