import { loggableUrl } from './logger';

describe('loggableUrl', () => {
  it('hides the capability token of unsubscribe, confirmation, tracking and provider webhook paths', () => {
    expect(loggableUrl('/unsubscribe/abc.def?x=1')).toBe('/unsubscribe/[token]?x=1');
    expect(loggableUrl('/confirm/AQGiH0d1HXfk')).toBe('/confirm/[token]');
    expect(loggableUrl('/t/o/tok')).toBe('/t/o/[token]');
    expect(loggableUrl('/inbound/ses/3q2-7wQ9v1Xb0aLk4Yc8sTn5uEfGhJiK')).toBe(
      '/inbound/ses/[token]',
    );
    expect(loggableUrl('/contacts/0190')).toBe('/contacts/0190');
  });
});
