import { SendingStatus } from '../projects/project.entity';
import { judge } from './sender-health-rules';

describe('sender health thresholds', () => {
  it('judges nothing under 100 sent', () => {
    expect(judge({ sent: 99, bounced: 99, complained: 99 }).status).toBe(SendingStatus.HEALTHY);
  });

  it('WARNING at 5% bounces or 0.1% complaints', () => {
    expect(judge({ sent: 1000, bounced: 49, complained: 0 }).status).toBe(SendingStatus.HEALTHY);
    expect(judge({ sent: 1000, bounced: 50, complained: 0 }).status).toBe(SendingStatus.WARNING);
    expect(judge({ sent: 1000, bounced: 0, complained: 1 }).status).toBe(SendingStatus.WARNING);
  });

  it('PAUSED at 10% bounces with at least 10, or 0.3% complaints with at least 5', () => {
    expect(judge({ sent: 1000, bounced: 100, complained: 0 })).toMatchObject({
      status: SendingStatus.PAUSED,
      bounceRate: 0.1,
    });
    expect(judge({ sent: 2000, bounced: 0, complained: 6 }).status).toBe(SendingStatus.PAUSED);
    // 0.3% of 1,000 is 3 complaints: under the minimum of 5, only a warning.
    expect(judge({ sent: 1000, bounced: 0, complained: 4 }).status).toBe(SendingStatus.WARNING);
    expect(judge({ sent: 100, bounced: 9, complained: 0 }).status).toBe(SendingStatus.WARNING);
    expect(judge({ sent: 100, bounced: 10, complained: 0 }).status).toBe(SendingStatus.PAUSED);
  });
});
