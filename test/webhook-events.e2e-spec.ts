import { Client } from 'pg';
import { eventMatches, isDeliverable } from '../src/webhooks/webhook-events';
import { createTestDatabase } from './support/test-app';

/**
 * The webhook event rules exist twice: in SQL (the outbox trigger, the
 * authority) and in TypeScript (the after-commit fast path). They must agree.
 */
const NAMES = [
  'email.sent',
  'email.queued',
  'email.opened',
  'contact.unsubscribed',
  'contact.subscribed',
  'campaign.sent',
  'campaign.started',
  'campaign.cancelled',
  'domain.verified',
  'domain.failed',
  'workflow.execution.failed',
  'webhook.disabled',
  'webhook.test',
  'signup',
  'emails.sent',
  'segment.0190.entered',
  'email',
  'contactx.y',
];
const PATTERNS = [
  ['*'],
  ['email.*'],
  ['email.sent'],
  ['contact.*', 'campaign.sent'],
  ['email'],
  ['emails.*'],
  ['campaign.*'],
  ['workflow.*'],
  ['domain.verified'],
];

describe('webhook event rules: SQL and TypeScript agree', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = new Client({ connectionString: db.url });
    await client.connect();
  });

  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it.each(NAMES)('%s', async (name) => {
    const deliverable = (await client.query('SELECT webhook_deliverable($1) AS d', [name])).rows[0]
      .d;
    expect({ name, deliverable: isDeliverable(name) }).toEqual({ name, deliverable });
    for (const patterns of PATTERNS) {
      const matches = (
        await client.query('SELECT webhook_event_matches($1::text[], $2) AS m', [patterns, name])
      ).rows[0].m;
      expect({ name, patterns, matches: eventMatches(patterns, name) }).toEqual({
        name,
        patterns,
        matches,
      });
    }
  });
});
