import { FEED_HIGH_WATER, feedHighWater, feedShare } from './campaign-runner';

describe('campaign feed backlog', () => {
  it('keeps a second of delivery at the configured rate, within its bounds', () => {
    expect(feedHighWater(200)).toBe(200);
    expect(feedHighWater(14)).toBe(50);
    expect(feedHighWater(1_000_000)).toBe(FEED_HIGH_WATER);
  });

  it('divides the backlog between projects, then between a project’s campaigns', () => {
    expect(feedShare(1000, { projects: 1, ofProject: 1 })).toBe(1000);
    expect(feedShare(1000, { projects: 2, ofProject: 1 })).toBe(500);
    // Two campaigns of one project hold as much together as the other project's one.
    expect(feedShare(1000, { projects: 2, ofProject: 2 })).toBe(250);
    // A campaign that reads the load before its own start is visible still gets a share.
    expect(feedShare(1000, { projects: 0, ofProject: 0 })).toBe(1000);
    expect(feedShare(50, { projects: 80, ofProject: 1 })).toBe(1);
  });
});
