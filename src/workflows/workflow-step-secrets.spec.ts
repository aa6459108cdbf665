import { maskCredentials, restoreCredentials } from '../webhooks/url-credentials';
import { maskSteps, realValues, sealableSteps } from './workflow-step-secrets';
import type { WorkflowStep } from './workflow-steps';

const hook = (id: string, url: string, headers?: Record<string, string>): WorkflowStep => ({
  id,
  type: 'WEBHOOK',
  url,
  method: 'POST',
  ...(headers ? { headers } : {}),
});

describe('URL credentials', () => {
  it('masks user and password as ***, leaves a URL without them as it is', () => {
    expect(maskCredentials('https://u:p%40ss@Example.com:8443/a?b=1')).toBe(
      'https://***@example.com:8443/a?b=1',
    );
    expect(maskCredentials('https://example.com/a')).toBe('https://example.com/a');
  });

  it('restores stored credentials on the same origin only', () => {
    expect(restoreCredentials('https://***@h.test/new', 'https://u:p@h.test/old')).toBe(
      'https://u:p@h.test/new',
    );
    expect(restoreCredentials('https://***@other.test/new', 'https://u:p@h.test/old')).toBeNull();
    expect(restoreCredentials('http://***@h.test/new', 'https://u:p@h.test/old')).toBeNull();
    expect(restoreCredentials('https://***@h.test/new', 'https://h.test/old')).toBeNull();
  });
});

describe('WEBHOOK step secrets', () => {
  const nested = (step: WorkflowStep): WorkflowStep[] => [
    { id: 'c', type: 'CONDITION', condition: {}, then: [], else: [step] },
  ];

  it('stores *** for every header value and URL credential, nested steps included, and seals the real ones', () => {
    const sealed = sealableSteps(
      nested(hook('h', 'https://u:p@h.test/x', { Authorization: 'Bearer t', 'X-A': '{{ a }}' })),
      new Map(),
    );
    expect(sealed.errors).toEqual([]);
    expect(sealed.steps).toEqual(
      nested(hook('h', 'https://***@h.test/x', { Authorization: '***', 'X-A': '***' })),
    );
    expect(sealed.secrets).toEqual({
      h: { url: 'https://u:p@h.test/x', headers: { Authorization: 'Bearer t', 'X-A': '{{ a }}' } },
    });
  });

  it('*** keeps the stored value of the same step and header; nothing to keep is an error on that field', () => {
    const stored = realValues([hook('h', 'https://***@h.test/x', { Authorization: '***' })], {
      h: { url: 'https://u:p@h.test/x', headers: { Authorization: 'Bearer t' } },
    });
    const kept = sealableSteps(
      [hook('h', 'https://***@h.test/y', { Authorization: '***', 'X-B': 'b' })],
      stored,
    );
    expect(kept.errors).toEqual([]);
    expect(kept.secrets.h).toEqual({
      url: 'https://u:p@h.test/y',
      headers: { Authorization: 'Bearer t', 'X-B': 'b' },
    });
    const refused = sealableSteps(
      nested(hook('other', 'https://***@h.test/x', { Authorization: '***' })),
      stored,
    );
    expect(refused.errors.map((e) => e.field)).toEqual([
      'steps[0].else[0].url',
      'steps[0].else[0].headers.Authorization',
    ]);
  });

  it('a workflow saved before sealing: its clear values are the stored ones, and answers mask them', () => {
    const legacy = [hook('h', 'https://u:p@h.test/x', { Authorization: 'Bearer old' })];
    expect(maskSteps(legacy)).toEqual([
      hook('h', 'https://***@h.test/x', { Authorization: '***' }),
    ]);
    const kept = sealableSteps(
      [hook('h', 'https://***@h.test/x', { Authorization: '***' })],
      realValues(legacy, {}),
    );
    expect(kept.secrets.h).toEqual({
      url: 'https://u:p@h.test/x',
      headers: { Authorization: 'Bearer old' },
    });
  });
});
