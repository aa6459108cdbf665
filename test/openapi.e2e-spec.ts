import { verifyDomainForTest } from './support/domains';
import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { DataSource } from 'typeorm';
import { EmailsService } from '../src/sending/emails.service';
import { TrackingLinks } from '../src/engagement/tracking-links';
import { ConfirmationTokens } from '../src/opt-in/confirmation-token';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { pollUntil } from './support/poll';
import { InjectResult, setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * The document cannot drift: every operation of /openapi.json is called for
 * real (success, and the cheap error statuses), and every answer's status,
 * content type, required headers and body are checked against the document
 * with a JSON Schema validator. Validation is strict: an object schema with
 * `properties` accepts no other property unless it says so, so a field the
 * server sends but the document omits fails as surely as a missing one.
 */

// ---------------------------------------------------------------- document types

interface Schema {
  [key: string]: unknown;
}
interface MediaType {
  schema?: Schema;
}
interface ResponseDoc {
  description: string;
  content?: Record<string, MediaType>;
  headers?: Record<string, { $ref?: string; required?: boolean }>;
}
interface ParameterDoc {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
}
interface OperationDoc {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Array<Record<string, string[]>>;
  parameters?: ParameterDoc[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, ResponseDoc>;
}
interface OpenApiDoc {
  openapi: string;
  security?: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, OperationDoc>>;
  components: {
    schemas: Record<string, Schema>;
    headers: Record<string, { required?: boolean; schema: Schema }>;
    securitySchemes: Record<string, Schema>;
  };
}

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

// ---------------------------------------------------------------- OpenAPI 3.0 → JSON Schema

const SCHEMAS_ID = 'https://mailwright.test/openapi-schemas';
const ANNOTATIONS_ONLY = [
  'example',
  'examples',
  'xml',
  'externalDocs',
  'discriminator',
  'deprecated',
  'readOnly',
  'writeOnly',
];

/**
 * OpenAPI 3.0 schema → JSON Schema for Ajv: `nullable` becomes a null type,
 * $refs point at the shared definitions, and every object with `properties`
 * (and no combinator) refuses other properties unless it declares
 * additionalProperties itself.
 */
function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (!node || typeof node !== 'object') return node;
  const s: Schema = { ...(node as Schema) };
  for (const key of ANNOTATIONS_ONLY) delete s[key];
  if (typeof s.$ref === 'string') {
    // In OpenAPI 3.0 the siblings of a $ref are ignored.
    return { $ref: s.$ref.replace('#/components/schemas/', `${SCHEMAS_ID}#/definitions/`) };
  }
  if (s.properties) {
    s.properties = Object.fromEntries(
      Object.entries(s.properties as Record<string, unknown>).map(([k, v]) => [k, toJsonSchema(v)]),
    );
  }
  if (s.items) s.items = toJsonSchema(s.items);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') {
    s.additionalProperties = toJsonSchema(s.additionalProperties);
  }
  const combined = ['allOf', 'anyOf', 'oneOf'].some((k) => k in s);
  for (const key of ['allOf', 'anyOf', 'oneOf']) if (s[key]) s[key] = toJsonSchema(s[key]);
  if (s.not) s.not = toJsonSchema(s.not);
  if (s.properties && s.additionalProperties === undefined && !combined)
    s.additionalProperties = false;
  const nullable = s.nullable === true;
  delete s.nullable;
  if (!nullable) return s;
  if (typeof s.type === 'string' && !combined) {
    s.type = [s.type, 'null'];
    if (Array.isArray(s.enum)) s.enum = [...(s.enum as unknown[]), null];
    return s;
  }
  return { anyOf: [s, { type: 'null' }] };
}

/** Paths of request-body properties that declare a `default`, through $refs. */
function requestDefaults(
  schema: unknown,
  doc?: OpenApiDoc,
  path = '',
  seen = new Set<string>(),
): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const s = schema as Schema;
  if (typeof s.$ref === 'string') {
    const name = s.$ref.split('/').pop()!;
    if (seen.has(name) || !doc) return [];
    seen.add(name);
    return requestDefaults(doc.components.schemas[name], doc, path, seen);
  }
  const found = 'default' in s ? [path || '(body)'] : [];
  for (const [name, property] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) {
    found.push(...requestDefaults(property, doc, path ? `${path}.${name}` : name, seen));
  }
  for (const key of ['items', 'allOf', 'anyOf', 'oneOf']) {
    const sub = s[key];
    for (const member of Array.isArray(sub) ? sub : sub ? [sub] : [])
      found.push(...requestDefaults(member, doc, path, seen));
  }
  return found;
}

// ---------------------------------------------------------------- test cases

/** One real request; `status` is the answer it must get. */
interface Case {
  name: string;
  status: number;
  params?: Record<string, string>;
  query?: string;
  body?: unknown;
  /** Sent as is (a string body) with this content type. */
  contentType?: string;
  key?: 'secret' | 'public' | 'none';
  headers?: Record<string, string>;
}

interface Fixtures {
  project: TestProject;
  contactId: string;
  contactEmail: string;
  templateId: string;
  segmentId: string;
  domainId: string;
  importId: string;
  emailId: string;
  campaignId: string;
  newContact(): Promise<string>;
  /** A contact suppressed by hand (POST /suppressions): its id. */
  newSuppression(): Promise<string>;
  newCampaign(): Promise<string>;
  /** A campaign that really started (content, counters), sent to nobody, set back to SENDING. */
  newSendingCampaign(paused?: boolean): Promise<string>;
  schedule(campaignId: string): Promise<void>;
  webhookId: string;
  newWebhook(): Promise<string>;
  /** A delivery of webhookId (its test event). */
  newDelivery(): Promise<string>;
  workflowId: string;
  newWorkflow(): Promise<string>;
  /** An execution of workflowId, waiting in its delay. */
  newExecution(): Promise<string>;
  newSegment(): Promise<string>;
  newTemplate(): Promise<string>;
  newDomain(): Promise<string>;
  unsubscribeToken(): string;
  /** A genuine confirmation link's token for contactId (double opt-in). */
  confirmToken(): string;
  /** The inbound id of the project's postmark webhook, whose basic-auth credentials are POSTMARK_AUTH. */
  postmarkInboundId(): Promise<string>;
  openToken(): string;
  clickToken(): string;
  /** A dashboard session of the project (POST /session): its Cookie header and CSRF token. */
  newSession(): Promise<{ cookie: string; csrfToken: string }>;
  /** A public key of the project: its id. */
  newKey(): Promise<string>;
  /** Sets the project's tracking domain, its CNAME published and verified when `verified`. */
  trackingDomain(name: string, verified: boolean): Promise<void>;
}

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';
const POSTMARK_AUTH = { username: 'openapi', password: 'openapi-password' };
const basicAuth = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});
const CONDITION = {
  logic: 'AND',
  conditions: [{ field: 'email', operator: 'contains', value: '@' }],
};
let counter = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++counter}`;

/**
 * The success cases (and the error cases the generic probes below cannot
 * derive) of every operation, keyed `METHOD /path` as in the document. An
 * operation in the document without a row here fails the coverage test.
 */
const CASES: Record<string, (f: Fixtures) => Promise<Case[]> | Case[]> = {
  'GET /health/live': () => [{ name: 'live', status: 200, key: 'none' }],
  'GET /health/ready': () => [{ name: 'ready', status: 200, key: 'none' }],

  'POST /session': (f) => [
    { name: 'secret key', status: 200, key: 'none', body: { key: f.project.secretKey } },
    { name: 'public key', status: 401, key: 'none', body: { key: f.project.publicKey } },
    { name: 'no key', status: 422, key: 'none', body: {} },
  ],
  'GET /session': async (f) => [
    {
      name: 'signed in',
      status: 200,
      key: 'none',
      headers: { cookie: (await f.newSession()).cookie },
    },
    { name: 'with a key', status: 400 },
    { name: 'signed out', status: 401, key: 'none' },
  ],
  'DELETE /session': async (f): Promise<Case[]> => {
    const session = await f.newSession();
    return [
      {
        name: 'sign out',
        status: 200,
        key: 'none',
        headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken },
      },
      {
        name: 'no CSRF token',
        status: 403,
        key: 'none',
        headers: { cookie: (await f.newSession()).cookie },
      },
    ];
  },

  'GET /project': () => [{ name: 'get', status: 200 }],
  'PATCH /project': () => [
    { name: 'rename', status: 200, body: { name: 'OpenAPI project' } },
    {
      name: 'default sender',
      status: 200,
      body: { defaultFrom: { email: 'hello@openapi-sender.test', name: 'Hello' } },
    },
    { name: 'clear default sender', status: 200, body: { defaultFrom: null } },
    { name: 'tracking domain', status: 200, body: { trackingDomain: 'links.openapi.test' } },
    { name: 'clear tracking domain', status: 200, body: { trackingDomain: null } },
    { name: 'tracking domain on an address', status: 422, body: { trackingDomain: '10.0.0.1' } },
    { name: 'double opt-in off', status: 200, body: { doubleOptIn: { enabled: false } } },
    {
      name: 'double opt-in without defaultFrom',
      status: 422,
      body: { doubleOptIn: { enabled: true } },
    },
    {
      name: 'confirmation template of another project',
      status: 404,
      body: { doubleOptIn: { enabled: false, templateId: UNKNOWN_ID } },
    },
    { name: 'empty body', status: 422, body: {} },
  ],
  'POST /project/tracking-domain/verify': async (f) => {
    await f.trackingDomain('verify.openapi.test', false);
    return [{ name: 'verify', status: 200 }];
  },
  'GET /tracking-domains/check': async (f) => {
    await f.trackingDomain('ask.openapi.test', true);
    return [
      { name: 'verified', status: 200, key: 'none', query: 'domain=ask.openapi.test' },
      { name: 'unknown', status: 404, key: 'none', query: 'domain=nope.openapi.test' },
      { name: 'missing domain', status: 400, key: 'none' },
    ];
  },
  'GET /project/keys': () => [{ name: 'list', status: 200, query: 'limit=1' }],
  'GET /project/stats': () => [
    { name: 'default window', status: 200 },
    { name: 'a week', status: 200, query: 'days=7' },
    { name: 'too long', status: 400, query: 'days=91' },
  ],
  'GET /events/per-minute': () => [
    { name: 'last hour', status: 200 },
    { name: 'five minutes', status: 200, query: 'minutes=5' },
    { name: 'too long', status: 400, query: 'minutes=121' },
  ],
  'POST /project/keys': () => [
    { name: 'secret', status: 201, body: { type: 'secret', name: 'OpenAPI' } },
    { name: 'public', status: 201, body: { type: 'public' } },
    { name: 'bad type', status: 422, body: { type: 'admin' } },
  ],
  'DELETE /project/keys/{id}': async (f) => [
    { name: 'revoke', status: 200, params: { id: await f.newKey() } },
    { name: 'unknown', status: 404, params: { id: UNKNOWN_ID } },
  ],
  'PUT /project/inbound/{provider}': () => [
    { name: 'postmark', status: 200, params: { provider: 'postmark' }, body: POSTMARK_AUTH },
    { name: 'ses', status: 200, params: { provider: 'ses' }, body: {} },
    { name: 'missing secret', status: 422, params: { provider: 'mailgun' }, body: {} },
    { name: 'unknown provider', status: 400, params: { provider: 'sparkpost' }, body: {} },
  ],
  'POST /inbound/{provider}/{inboundId}': async (f) => {
    const params = { provider: 'postmark', inboundId: await f.postmarkInboundId() };
    const bounce = {
      RecordType: 'Bounce',
      ID: 1,
      Type: 'HardBounce',
      Email: 'nobody-sent-here@example.com',
      Details: 'smtp;550 5.1.1 unknown',
    };
    return [
      {
        name: 'bounce',
        status: 200,
        key: 'none',
        params,
        body: bounce,
        headers: basicAuth(POSTMARK_AUTH.username, POSTMARK_AUTH.password),
      },
      {
        name: 'wrong credentials',
        status: 401,
        key: 'none',
        params,
        body: bounce,
        headers: basicAuth(POSTMARK_AUTH.username, 'wrong'),
      },
      {
        name: 'unknown provider',
        status: 400,
        key: 'none',
        params: { ...params, provider: 'sparkpost' },
        body: bounce,
      },
    ];
  },

  'GET /contacts': (f) => [
    { name: 'list', status: 200 },
    {
      name: 'filtered',
      status: 200,
      query: `email=${encodeURIComponent(f.contactEmail)}&subscribed=true&limit=5`,
    },
  ],
  'GET /contacts/export': (f) => [
    { name: 'csv', status: 200, query: `email=${encodeURIComponent(f.contactEmail)}` },
    { name: 'bad filter', status: 400, query: 'subscribed=maybe' },
  ],
  'POST /contacts': (f) => [
    {
      name: 'create',
      status: 201,
      body: { email: `${unique('c')}@example.com`, data: { plan: 'pro' } },
    },
    { name: 'duplicate', status: 409, body: { email: f.contactEmail } },
    {
      name: 'too large',
      status: 413,
      body: { email: 'big@example.com', data: { blob: 'x'.repeat(1024 * 1024 + 10) } },
    },
    { name: 'bad JSON', status: 400, body: '{"email":', contentType: 'application/json' },
    { name: 'bad email', status: 422, body: { email: 'not-an-address' } },
  ],
  'GET /contacts/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.contactId } }],
  'PATCH /contacts/{id}': (f) => [
    {
      name: 'update',
      status: 200,
      params: { id: f.contactId },
      body: { subscribed: true, data: { city: 'Paris' } },
    },
  ],
  'DELETE /contacts/{id}': async (f) => [
    { name: 'delete', status: 200, params: { id: await f.newContact() } },
  ],
  'POST /contacts/import': () => [
    {
      name: 'json',
      status: 202,
      body: { contacts: [{ email: `${unique('i')}@example.com` }, { email: 'broken' }] },
    },
    {
      name: 'csv',
      status: 202,
      body: `email,plan\n${unique('csv')}@example.com,pro\n`,
      contentType: 'text/csv',
    },
    { name: 'empty', status: 422, body: { contacts: [] } },
    { name: 'plain text', status: 400, body: 'email\na@b.c\n', contentType: 'text/plain' },
  ],
  'GET /contacts/imports': () => [{ name: 'list', status: 200 }],
  'GET /contacts/imports/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.importId } }],

  'POST /v1/track': (f) => [
    {
      name: 'secret key',
      status: 200,
      body: { email: f.contactEmail, event: 'signup', data: { plan: 'pro' } },
    },
    {
      name: 'public key',
      status: 200,
      key: 'public',
      body: { email: `${unique('t')}@example.com`, event: 'visit' },
    },
    { name: 'reserved event', status: 422, body: { email: f.contactEmail, event: 'email.sent' } },
  ],
  'POST /v1/subscribe': () => [
    {
      name: 'secret key',
      status: 200,
      body: { email: `${unique('s')}@example.com`, data: { plan: 'pro' } },
    },
    {
      name: 'public key',
      status: 200,
      key: 'public',
      body: { email: `${unique('s')}@example.com` },
    },
    { name: 'bad address', status: 422, body: { email: 'not-an-address' } },
  ],
  'GET /events': (f) => [
    { name: 'list', status: 200 },
    {
      name: 'filtered',
      status: 200,
      query: `contactId=${f.contactId}&name=signup&since=2020-01-01T00:00:00Z`,
    },
    { name: 'bad since', status: 400, query: 'since=yesterday' },
  ],
  'GET /events/names': () => [{ name: 'list', status: 200 }],

  'GET /segments': () => [{ name: 'list', status: 200 }],
  'POST /segments': () => [
    {
      name: 'create',
      status: 201,
      body: { name: unique('segment'), description: 'all', condition: CONDITION },
    },
    {
      name: 'bad condition',
      status: 422,
      body: { name: 'bad', condition: { logic: 'XOR', conditions: [] } },
    },
  ],
  'POST /segments/preview': () => [
    { name: 'preview', status: 200, body: { condition: CONDITION } },
  ],
  'GET /segments/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.segmentId } }],
  'PATCH /segments/{id}': (f) => [
    { name: 'update', status: 200, params: { id: f.segmentId }, body: { description: null } },
  ],
  'DELETE /segments/{id}': async (f) => [
    { name: 'delete', status: 200, params: { id: await f.newSegment() } },
  ],
  'GET /segments/{id}/contacts': (f) => [
    { name: 'members', status: 200, params: { id: f.segmentId }, query: 'limit=2' },
  ],

  'GET /campaigns': () => [
    { name: 'list', status: 200 },
    { name: 'filtered', status: 200, query: 'status=DRAFT&search=cmp' },
  ],
  'POST /campaigns': (f) => [
    {
      name: 'create',
      status: 201,
      body: {
        name: unique('campaign'),
        subject: 'Hi {{ firstName }}',
        body: '<p>News</p>',
        from: 'news@openapi-sender.test',
        audienceType: 'SEGMENT',
        segmentId: f.segmentId,
        trackClicks: false,
      },
    },
    {
      name: 'filtered audience',
      status: 201,
      body: {
        name: unique('campaign'),
        subject: 'S',
        body: '<p>B</p>',
        from: 'news@openapi-sender.test',
        audienceType: 'FILTERED',
        audienceFilter: CONDITION,
      },
    },
    {
      name: 'segment missing',
      status: 422,
      body: {
        name: 'x',
        subject: 'S',
        body: 'B',
        from: 'a@openapi-sender.test',
        audienceType: 'SEGMENT',
      },
    },
  ],
  'GET /campaigns/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.campaignId } }],
  'PATCH /campaigns/{id}': (f) => [
    {
      name: 'update',
      status: 200,
      params: { id: f.campaignId },
      body: { description: 'Monthly', fromName: null },
    },
  ],
  'DELETE /campaigns/{id}': async (f) => [
    { name: 'delete', status: 200, params: { id: await f.newCampaign() } },
  ],
  'POST /campaigns/{id}/send': async (f) => {
    const sending = await f.newCampaign();
    return [
      {
        name: 'schedule',
        status: 202,
        params: { id: await f.newCampaign() },
        body: { scheduledFor: new Date(Date.now() + 3600_000).toISOString() },
      },
      { name: 'send now', status: 202, params: { id: sending }, body: {} },
      { name: 'sent twice', status: 409, params: { id: sending }, body: {} },
    ];
  },
  'POST /campaigns/{id}/cancel': async (f) => {
    const scheduled = await f.newCampaign();
    await f.schedule(scheduled);
    return [
      { name: 'cancel a schedule', status: 200, params: { id: scheduled } },
      { name: 'cancel a draft', status: 409, params: { id: f.campaignId } },
    ];
  },
  'POST /campaigns/{id}/test': (f) => [
    { name: 'test', status: 202, params: { id: f.campaignId }, body: { emails: [f.contactEmail] } },
    { name: 'too many', status: 422, params: { id: f.campaignId }, body: { emails: [] } },
  ],
  'POST /bounces': (f) => [
    { name: 'by email id', status: 200, body: { emailId: f.emailId, type: 'soft' } },
    { name: 'by address', status: 200, body: { email: 'nobody@example.com', type: 'hard' } },
    { name: 'neither', status: 422, body: { type: 'hard' } },
    { name: 'bad type', status: 422, body: { emailId: f.emailId, type: 'bounce' } },
  ],
  'GET /suppressions': () => [
    { name: 'list', status: 200 },
    { name: 'by reason', status: 200, query: 'reason=manual&limit=5' },
    { name: 'bad reason', status: 400, query: 'reason=spam' },
  ],
  'POST /suppressions': () => [
    { name: 'suppress', status: 201, body: { email: `${unique('s')}@example.com` } },
    { name: 'bad email', status: 422, body: { email: 'nope' } },
  ],
  'DELETE /suppressions/{contactId}': async (f) => {
    const contactId = await f.newSuppression();
    return [
      { name: 'lift', status: 200, params: { contactId } },
      { name: 'not suppressed', status: 404, params: { contactId: f.contactId } },
    ];
  },
  'POST /campaigns/{id}/pause': async (f) => [
    { name: 'pause', status: 200, params: { id: await f.newSendingCampaign() } },
    { name: 'pause a draft', status: 409, params: { id: f.campaignId } },
  ],
  'POST /campaigns/{id}/resume': async (f) => [
    { name: 'resume', status: 200, params: { id: await f.newSendingCampaign(true) } },
    { name: 'resume a draft', status: 409, params: { id: f.campaignId } },
  ],
  'GET /project/health': () => [{ name: 'health', status: 200 }],
  'POST /project/health/resume': () => [{ name: 'resume', status: 200 }],
  'GET /campaigns/{id}/stats': (f) => [
    { name: 'stats', status: 200, params: { id: f.campaignId } },
  ],

  'GET /workflows': () => [
    { name: 'list', status: 200 },
    { name: 'enabled', status: 200, query: 'enabled=true&search=wf' },
  ],
  'POST /workflows': () => [
    {
      name: 'create',
      status: 201,
      body: {
        name: unique('wf'),
        trigger: { type: 'EVENT', event: 'signup' },
        steps: [{ type: 'DELAY', amount: 1, unit: 'days' }, { type: 'EXIT' }],
      },
    },
    {
      name: 'bad step',
      status: 422,
      body: { name: unique('wf'), trigger: { type: 'MANUAL' }, steps: [{ type: 'NOPE' }] },
    },
  ],
  'GET /workflows/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.workflowId } }],
  'PATCH /workflows/{id}': (f) => [
    {
      name: 'update',
      status: 200,
      params: { id: f.workflowId },
      body: { description: null, allowReentry: true },
    },
  ],
  'DELETE /workflows/{id}': async (f) => [
    { name: 'delete', status: 200, params: { id: await f.newWorkflow() } },
  ],
  'POST /workflows/{id}/rotate-secret': async (f) => [
    { name: 'rotate', status: 200, params: { id: await f.newWorkflow() } },
    { name: 'unknown', status: 404, params: { id: UNKNOWN_ID } },
  ],
  'GET /workflows/{id}/executions': (f) => [
    { name: 'list', status: 200, params: { id: f.workflowId } },
    {
      name: 'by status',
      status: 200,
      params: { id: f.workflowId },
      query: 'status=WAITING&limit=5',
    },
  ],
  'POST /workflows/{id}/executions': async (f) => [
    {
      name: 'start',
      status: 202,
      params: { id: f.workflowId },
      body: { email: `${unique('wfx')}@example.com`, data: { a: 1 } },
    },
    { name: 'neither', status: 422, params: { id: f.workflowId }, body: {} },
  ],
  'GET /workflows/{id}/executions/{executionId}': async (f) => [
    { name: 'get', status: 200, params: { id: f.workflowId, executionId: await f.newExecution() } },
  ],
  'POST /workflows/{id}/executions/{executionId}/cancel': async (f) => {
    const executionId = await f.newExecution();
    return [
      { name: 'cancel', status: 200, params: { id: f.workflowId, executionId } },
      { name: 'finished', status: 409, params: { id: f.workflowId, executionId } },
    ];
  },
  'GET /webhooks': () => [{ name: 'list', status: 200 }],
  'POST /webhooks': () => [
    {
      name: 'create',
      status: 201,
      body: {
        url: 'https://hooks.example.com/mailwright',
        events: ['email.*', 'contact.unsubscribed'],
        description: 'App',
      },
    },
    {
      name: 'bad pattern',
      status: 422,
      body: { url: 'https://hooks.example.com/x', events: ['Email Sent'] },
    },
  ],
  'GET /webhooks/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.webhookId } }],
  'PATCH /webhooks/{id}': (f) => [
    {
      name: 'update',
      status: 200,
      params: { id: f.webhookId },
      body: { description: null, enabled: false },
    },
  ],
  'DELETE /webhooks/{id}': async (f) => [
    { name: 'delete', status: 200, params: { id: await f.newWebhook() } },
  ],
  'POST /webhooks/{id}/rotate-secret': (f) => [
    { name: 'rotate', status: 200, params: { id: f.webhookId } },
  ],
  'POST /webhooks/{id}/test': (f) => [{ name: 'test', status: 202, params: { id: f.webhookId } }],
  'GET /webhooks/{id}/deliveries': (f) => [
    { name: 'list', status: 200, params: { id: f.webhookId } },
    {
      name: 'by status',
      status: 200,
      params: { id: f.webhookId },
      query: 'status=PENDING&limit=5',
    },
  ],
  'POST /webhooks/{id}/deliveries/{deliveryId}/retry': async (f) => [
    { name: 'retry', status: 202, params: { id: f.webhookId, deliveryId: await f.newDelivery() } },
  ],

  'GET /templates': () => [
    { name: 'list', status: 200 },
    { name: 'filtered', status: 200, query: 'type=TRANSACTIONAL&search=welcome' },
  ],
  'POST /templates': () => [
    {
      name: 'create',
      status: 201,
      body: {
        name: 'Welcome',
        subject: 'Hi {{ name }}',
        body: '<p>Hi</p>',
        type: 'MARKETING',
        from: 'news@example.com',
      },
    },
    {
      name: 'bad liquid',
      status: 422,
      body: { name: 'Bad', subject: '{% if %}', body: 'x', type: 'TRANSACTIONAL' },
    },
  ],
  'GET /templates/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.templateId } }],
  'PATCH /templates/{id}': (f) => [
    {
      name: 'update',
      status: 200,
      params: { id: f.templateId },
      body: { subject: 'Hello {{ email }}', replyTo: null },
    },
  ],
  'DELETE /templates/{id}': async (f) => [
    { name: 'delete', status: 200, params: { id: await f.newTemplate() } },
  ],
  'POST /templates/{id}/preview': (f) => [
    {
      name: 'preview',
      status: 200,
      params: { id: f.templateId },
      body: { contactId: f.contactId, data: { name: 'Ada' } },
    },
  ],

  'POST /v1/send': (f) => {
    const key = unique('idem');
    const body = {
      to: f.contactEmail,
      subject: 'Hello',
      body: '<p>Hi</p>',
      from: 'hello@openapi-sender.test',
    };
    return [
      {
        name: 'send',
        status: 200,
        body: { ...body, to: [f.contactEmail, { email: 'x@example.com', name: 'X' }] },
      },
      { name: 'idempotent', status: 200, body, headers: { 'idempotency-key': key } },
      { name: 'replay', status: 200, body, headers: { 'idempotency-key': key } },
      {
        name: 'key reused',
        status: 409,
        body: { ...body, subject: 'Other' },
        headers: { 'idempotency-key': key },
      },
      { name: 'unknown template', status: 404, body: { to: f.contactEmail, template: UNKNOWN_ID } },
      { name: 'no sender', status: 422, body: { to: f.contactEmail, subject: 'x', body: 'y' } },
    ];
  },
  'GET /emails': (f) => [
    { name: 'list', status: 200 },
    { name: 'filtered', status: 200, query: `contactId=${f.contactId}&status=QUEUED` },
  ],
  'GET /emails/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.emailId } }],
  'GET /emails/{id}/content': (f) => [
    { name: 'content', status: 200, params: { id: f.emailId } },
    { name: 'unknown', status: 404, params: { id: '00000000-0000-7000-8000-000000000000' } },
  ],

  'GET /domains': () => [
    { name: 'list', status: 200 },
    { name: 'filtered', status: 200, query: 'status=PENDING' },
  ],
  'POST /domains': () => [
    { name: 'create', status: 201, body: { domain: `${unique('d')}.openapi.test` } },
    { name: 'duplicate', status: 409, body: { domain: 'fixture.openapi.test' } },
    { name: 'bad name', status: 422, body: { domain: 'not a domain' } },
  ],
  'GET /domains/{id}': (f) => [{ name: 'get', status: 200, params: { id: f.domainId } }],
  'POST /domains/{id}/verify': (f) => [{ name: 'verify', status: 200, params: { id: f.domainId } }],
  'DELETE /domains/{id}': async (f) => [
    { name: 'delete', status: 200, params: { id: await f.newDomain() } },
  ],

  'GET /unsubscribe/{token}': (f) => [
    { name: 'page', status: 200, key: 'none', params: { token: f.unsubscribeToken() } },
    { name: 'forged', status: 404, key: 'none', params: { token: 'forged-token' } },
  ],
  'GET /confirm/{token}': (f) => [
    { name: 'page', status: 200, key: 'none', params: { token: f.confirmToken() } },
    { name: 'forged', status: 404, key: 'none', params: { token: 'forged-token' } },
  ],
  'POST /unsubscribe/{token}': (f) => [
    {
      name: 'one-click',
      status: 200,
      key: 'none',
      params: { token: f.unsubscribeToken() },
      body: 'List-Unsubscribe=One-Click',
      contentType: 'application/x-www-form-urlencoded',
    },
    { name: 'forged', status: 404, key: 'none', params: { token: 'forged-token' } },
  ],

  'GET /t/o/{token}': (f) => [
    { name: 'pixel', status: 200, key: 'none', params: { token: f.openToken() } },
    { name: 'forged', status: 404, key: 'none', params: { token: 'forged-token' } },
  ],
  'GET /t/c/{token}': (f) => [
    { name: 'redirect', status: 302, key: 'none', params: { token: f.clickToken() } },
    { name: 'forged', status: 404, key: 'none', params: { token: 'forged-token' } },
  ],
};

/**
 * Error probes derived from an operation's first success case and the
 * statuses its document promises: no key (401), a pk_ key (403), an unknown
 * id (404), an id that is not a UUID (400, on every route with an id),
 * a bad page size (400) and an unknown body field (422).
 */
function derivedProbes(op: OperationDoc, success: Case): Case[] {
  const documented = (status: number) => String(status) in op.responses;
  const probes: Case[] = [];
  // Keyless operations (security: []) authenticate otherwise (provider webhooks' signatures): no key probes.
  const keyed = op.security === undefined;
  if (documented(401) && keyed) {
    // No credential at all: neither a key nor the dashboard's session cookie.
    const headers = Object.fromEntries(
      Object.entries(success.headers ?? {}).filter(([name]) => name !== 'cookie'),
    );
    probes.push({ ...success, name: 'no key', status: 401, key: 'none', headers });
  }
  // The two routes a public key may call.
  const publicAllowed =
    op.operationId === 'events_track' || op.operationId === 'contacts_subscribe';
  if (documented(403) && keyed && !publicAllowed) {
    probes.push({ ...success, name: 'public key', status: 403, key: 'public' });
  }
  if (success.params?.id) {
    if (documented(404))
      probes.push({
        ...success,
        name: 'unknown id',
        status: 404,
        params: { ...success.params, id: UNKNOWN_ID },
      });
    // Every id route validates the parameter (IdParamDto) and documents the 400.
    if (op.parameters?.find((p) => p.name === 'id')?.schema?.format !== 'uuid' || !documented(400))
      throw new Error(
        `${op.operationId}: {id} must be a documented UUID parameter with a documented 400`,
      );
    probes.push({
      ...success,
      name: 'id that is not a UUID',
      status: 400,
      params: { ...success.params, id: 'not-a-uuid' },
    });
  }
  if (documented(400) && op.parameters?.some((p) => p.in === 'query' && p.name === 'limit')) {
    probes.push({ ...success, name: 'limit out of range', status: 400, query: 'limit=0' });
  }
  const jsonBody = op.requestBody?.content['application/json'];
  if (
    documented(422) &&
    jsonBody &&
    success.body &&
    typeof success.body === 'object' &&
    !success.contentType
  ) {
    probes.push({
      ...success,
      name: 'unknown body field',
      status: 422,
      body: { ...(success.body as object), unexpectedField: 1 },
    });
  }
  return probes;
}

// ---------------------------------------------------------------- the test

describe('OpenAPI document (e2e): every operation, called for real, matches /openapi.json', () => {
  let dns: TestDnsServer;
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let doc: OpenApiDoc;
  let fixtures: Fixtures;
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  const validators = new Map<string, ValidateFunction>();

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      HTTP_METHODS.filter((m) => item[m]).map((m) => ({
        key: `${m.toUpperCase()} ${path}`,
        method: m,
        path,
        op: item[m],
      })),
    );

  async function call(method: Method, path: string, c: Case): Promise<InjectResult> {
    const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = c.params?.[name];
      if (value === undefined)
        throw new Error(`case "${c.name}" of ${method} ${path} has no path parameter ${name}`);
      return encodeURIComponent(value);
    });
    const keyName = c.key ?? 'secret';
    const key =
      keyName === 'none'
        ? null
        : keyName === 'public'
          ? fixtures.project.publicKey
          : fixtures.project.secretKey;
    return app.request({
      method,
      url: c.query ? `${url}?${c.query}` : url,
      key,
      body: c.body,
      headers: {
        ...(c.headers ?? {}),
        ...(c.contentType ? { 'content-type': c.contentType } : {}),
      },
    });
  }

  /** The answer must be documented: status, media type, required headers, body schema. */
  function check(key: string, op: OperationDoc, c: Case, res: InjectResult): void {
    const where = `${key} [${c.name}] answered ${res.status} ${res.raw.slice(0, 400)}`;
    const response = op.responses[String(res.status)];
    if (!response)
      throw new Error(
        `${where}: status ${res.status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`,
      );
    if (res.status !== c.status) {
      throw new Error(`${where}: the case expects ${c.status}`);
    }
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const required =
        header.required ??
        (header.$ref ? doc.components.headers[header.$ref.split('/').pop()!]?.required : false);
      if (required && res.headers[name.toLowerCase()] === undefined)
        throw new Error(`${where}: documented header ${name} is missing`);
    }
    const mediaType = String(res.headers['content-type'] ?? '')
      .split(';')[0]
      .trim();
    const content = response.content ?? {};
    if (!content[mediaType])
      throw new Error(
        `${where}: content type "${mediaType}" is not documented (${Object.keys(content).join(', ') || 'no body'})`,
      );
    const schema = content[mediaType].schema;
    if (!schema) throw new Error(`${where}: no schema for ${mediaType}`);
    const id = `${key} ${res.status} ${mediaType}`;
    let validate = validators.get(id);
    if (!validate) {
      validate = ajv.compile(toJsonSchema(schema) as object);
      validators.set(id, validate);
    }
    const body: unknown = mediaType === 'application/json' ? JSON.parse(res.raw) : res.raw;
    if (!validate(body)) {
      throw new Error(
        `${where}: the body does not match the document:\n${JSON.stringify(validate.errors, null, 2)}`,
      );
    }
  }

  /** A request the server accepts must be one the document allows: body media type and schema. */
  function checkRequest(key: string, op: OperationDoc, c: Case): void {
    if (c.body === undefined) return;
    const mediaType = c.contentType ?? 'application/json';
    const schema = op.requestBody?.content[mediaType]?.schema;
    if (!schema)
      throw new Error(
        `${key} [${c.name}]: the server accepts a ${mediaType} body the document does not describe`,
      );
    const validate = ajv.compile(toJsonSchema(schema) as object);
    const body =
      mediaType === 'application/json'
        ? c.body
        : typeof c.body === 'string' && /form-urlencoded/.test(mediaType)
          ? Object.fromEntries(new URLSearchParams(c.body))
          : c.body;
    if (!validate(body)) {
      throw new Error(
        `${key} [${c.name}]: the accepted request body does not match the document:\n${JSON.stringify(validate.errors, null, 2)}`,
      );
    }
  }

  beforeAll(async () => {
    dns = await startTestDnsServer();
    ctx = await setupTestApp({ DNS_SERVERS: dns.address });
    app = ctx.app;
    const res = await app.request<OpenApiDoc>({ method: 'GET', url: '/openapi.json' });
    expect(res.status).toBe(200);
    doc = res.body;
    const definitions = Object.fromEntries(
      Object.entries(doc.components.schemas).map(([name, s]) => [name, toJsonSchema(s)]),
    );
    ajv.addSchema({ $id: SCHEMAS_ID, definitions });

    const project = await app.createProject('OpenAPI');
    const ok = async (method: Method, url: string, body?: unknown, contentType?: string) => {
      const r = await app.request({
        method,
        url,
        key: project.secretKey,
        body,
        headers: contentType ? { 'content-type': contentType } : {},
      });
      if (r.status >= 300)
        throw new Error(`fixture ${method} ${url} answered ${r.status}: ${r.raw}`);
      return r.body.data as { id: string } & Record<string, unknown>;
    };
    const newContact = async () =>
      (await ok('POST', '/contacts', { email: `${unique('fixture')}@example.com` })).id;
    const contactEmail = `${unique('ada')}@example.com`;
    const contactId = (
      await ok('POST', '/contacts', { email: contactEmail, data: { name: 'Ada' } })
    ).id;
    const newSegment = async () =>
      (await ok('POST', '/segments', { name: unique('seg'), condition: CONDITION })).id;
    const newTemplate = async () =>
      (
        await ok('POST', '/templates', {
          name: unique('tpl'),
          subject: 'S',
          body: '<p>B</p>',
          type: 'TRANSACTIONAL',
        })
      ).id;
    const newDomain = async () =>
      (await ok('POST', '/domains', { domain: `${unique('dom')}.openapi.test` })).id;
    const newWebhook = async () =>
      (await ok('POST', '/webhooks', { url: 'https://hooks.example.com/fixture', events: ['*'] }))
        .id;
    const webhookId = await newWebhook();
    const newWorkflow = async () =>
      (
        await ok('POST', '/workflows', {
          name: unique('wf'),
          enabled: true,
          trigger: { type: 'MANUAL' },
          steps: [{ id: 'wait', type: 'DELAY', amount: 1, unit: 'hours' }],
        })
      ).id;
    const workflowId = await newWorkflow();
    const newCampaign = async () =>
      (
        await ok('POST', '/campaigns', {
          name: unique('cmp'),
          subject: 'S',
          body: '<p>B</p>',
          from: 'news@openapi-sender.test',
          audienceType: 'ALL',
        })
      ).id;
    const sent = (await ok('POST', '/v1/send', {
      to: contactEmail,
      subject: 'Fixture',
      body: '<p>x</p>',
      from: 'hello@openapi-sender.test',
    })) as unknown as { emails: Array<{ id: string }> };
    fixtures = {
      trackingDomain: async (name, verified) => {
        await ok('PATCH', '/project', { trackingDomain: name });
        if (!verified) return;
        // A tracking domain verifies only under a VERIFIED sending domain of the project.
        await verifyDomainForTest(app, project, name, dns);
        dns.setCname(name, app.config.trackingCnameTarget);
        await ok('POST', '/project/tracking-domain/verify');
      },
      project,
      contactId,
      contactEmail,
      templateId: await newTemplate(),
      segmentId: await newSegment(),
      domainId: (await ok('POST', '/domains', { domain: 'fixture.openapi.test' })).id,
      importId: (
        await ok('POST', '/contacts/import', {
          contacts: [{ email: `${unique('imp')}@example.com` }],
        })
      ).id,
      emailId: sent.emails[0].id,
      campaignId: await newCampaign(),
      newContact,
      newKey: async () =>
        ((await ok('POST', '/project/keys', { type: 'public' })).key as { id: string }).id,
      newSession: async () => {
        const res = await app.request({
          method: 'POST',
          url: '/session',
          body: { key: project.secretKey },
        });
        const cookie = String(res.headers['set-cookie']).split(';')[0];
        return { cookie, csrfToken: (res.body as { data: { csrfToken: string } }).data.csrfToken };
      },
      newSuppression: async () =>
        (
          (await ok('POST', '/suppressions', {
            email: `${unique('sup')}@example.com`,
          })) as unknown as { contactId: string }
        ).contactId,
      newCampaign,
      newSendingCampaign: async (paused = false) => {
        const id = (
          await ok('POST', '/campaigns', {
            name: unique('cmp'),
            subject: 'S',
            body: '<p>B</p>',
            from: 'news@openapi-sender.test',
            audienceType: 'FILTERED',
            audienceFilter: {
              logic: 'AND',
              conditions: [{ field: 'email', operator: 'equals', value: 'nobody@none.invalid' }],
            },
          })
        ).id;
        await ok('POST', `/campaigns/${id}/send`, {});
        await pollUntil(
          async () => (await ok('GET', `/campaigns/${id}`)).status,
          (status) => status === 'SENT',
          20_000,
        );
        await app.app
          .get(DataSource)
          .query(`UPDATE campaigns SET status = $2 WHERE id = $1`, [
            id,
            paused ? 'PAUSED' : 'SENDING',
          ]);
        return id;
      },
      webhookId,
      newWebhook,
      newDelivery: async () => (await ok('POST', `/webhooks/${webhookId}/test`)).id,
      postmarkInboundId: async () => {
        const hook = (await ok('PUT', '/project/inbound/postmark', POSTMARK_AUTH)) as unknown as {
          url: string;
        };
        return new URL(hook.url).pathname.split('/').pop()!;
      },
      workflowId,
      newWorkflow,
      newExecution: async () =>
        (
          await ok('POST', `/workflows/${workflowId}/executions`, {
            email: `${unique('wfx')}@example.com`,
          })
        ).id,
      schedule: async (id) => {
        await ok('POST', `/campaigns/${id}/send`, {
          scheduledFor: new Date(Date.now() + 3600_000).toISOString(),
        });
      },
      newSegment,
      newTemplate,
      newDomain,
      unsubscribeToken: () => {
        const url = app.app.get(EmailsService).unsubscribeUrl(project.id, contactId, null);
        return decodeURIComponent(new URL(url).pathname.split('/').pop()!);
      },
      confirmToken: () =>
        new ConfirmationTokens(app.config.appSecret).sign({
          projectId: project.id,
          contactId,
          issuedAt: new Date(),
        }),
      openToken: () =>
        new URL(app.app.get(TrackingLinks).openUrl(sent.emails[0].id)).pathname.split('/').pop()!,
      clickToken: () =>
        new URL(
          app.app.get(TrackingLinks).clickUrl(sent.emails[0].id, 'https://example.com/a?b=1')!,
        ).pathname
          .split('/')
          .pop()!,
    };
  });

  afterAll(async () => {
    await ctx?.close();
    await dns?.stop();
  });

  it('describes every operation: summary, unique operationId, a success schema, ErrorEnvelope errors, security', () => {
    const ids = new Set<string>();
    const scheme = doc.components.securitySchemes.bearer;
    expect(scheme).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(scheme.bearerFormat).toBeUndefined();
    expect(String(scheme.description)).toMatch(/sk_/);
    expect(String(scheme.description)).toMatch(/pk_/);
    expect(doc.security).toEqual([{ bearer: [] }]);
    for (const { key, op } of operations()) {
      expect({ key, summary: typeof op.summary === 'string' && op.summary.length > 0 }).toEqual({
        key,
        summary: true,
      });
      expect({ key, operationId: op.operationId }).toEqual({
        key,
        operationId: expect.stringMatching(/^[a-z][A-Za-z]*_[a-z][A-Za-z]*$/),
      });
      expect(ids.has(op.operationId!)).toBe(false);
      ids.add(op.operationId!);
      // A redirect (the tracked link's 302) is that operation's success.
      const successes = Object.keys(op.responses).filter((s) => /^(2\d\d|302)$/.test(s));
      expect({ key, successes: successes.length }).toEqual({ key, successes: 1 });
      for (const [status, response] of Object.entries(op.responses)) {
        const media = Object.entries(response.content ?? {});
        expect({
          key,
          status,
          hasSchema: media.length > 0 && media.every(([, m]) => !!m.schema),
        }).toEqual({ key, status, hasSchema: true });
        // Errors are the ErrorEnvelope; the one exception is the readiness probe's own 503 body.
        if (
          Number(status) >= 400 &&
          response.content?.['application/json'] &&
          !(key === 'GET /health/ready' && status === '503')
        ) {
          expect({ key, status, schema: response.content['application/json'].schema }).toEqual({
            key,
            status,
            schema: { $ref: '#/components/schemas/ErrorEnvelope' },
          });
        }
      }
      // Generated clients (openapi-typescript 7) make a request property with `default` required: say defaults in words.
      const withDefault = requestDefaults(op.requestBody?.content['application/json']?.schema, doc);
      expect({ key, withDefault }).toEqual({ key, withDefault: [] });
      if (op.security === undefined) {
        // Keyed: the global bearer requirement, and the errors the key guard gives.
        for (const status of ['401', '403', '429', '500'])
          expect({ key, status, documented: status in op.responses }).toEqual({
            key,
            status,
            documented: true,
          });
      } else {
        expect({ key, security: op.security }).toEqual({ key, security: [] });
      }
    }
  });

  it('has a case for every operation, and documents every route the server serves', () => {
    const documented = operations()
      .map((o) => o.key)
      .sort();
    expect(Object.keys(CASES).sort()).toEqual(documented);

    // Fastify's own route table: every method and path it answers, but the docs themselves,
    // HEAD (implied by GET) and OPTIONS (CORS preflight).
    const served: string[] = [];
    const stack: string[] = [];
    const table = app.app.getHttpAdapter().getInstance().printRoutes({ commonPrefix: false });
    for (const line of table.split('\n')) {
      const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
      if (!m) continue;
      const depth = m[1].length / 4;
      stack.length = depth;
      stack.push(m[2]);
      const path = stack.join('');
      for (const method of (m[3] ?? '').split(',').map((x) => x.trim())) {
        if (!method || method === '-' || method === 'HEAD' || method === 'OPTIONS') continue;
        // A wildcard route (`/t/c/*`, for tokens past the router's parameter limit) is documented with its name.
        const named = path.replace(/:(\w+)/g, '{$1}');
        const wildcard = named.endsWith('/*')
          ? documented.find((d) => d.startsWith(`${method} ${named.slice(0, -1)}{`))
          : undefined;
        served.push(wildcard ?? `${method} ${named}`);
      }
    }
    const undocumented = served.filter(
      // Also not API operations: GET /metrics (for Prometheus), the queue dashboard (for operators),
      // and the dashboard's pages: GET / (a browser's redirect) and /app/… (the tree prints `/app/*`
      // in pieces, one of them `/*`).
      (route) =>
        !documented.includes(route) &&
        !/^GET \/(openapi\.(json|yaml)|docs|metrics$)/.test(route) &&
        !/^GET \/(app.*|\*)?$/.test(route) &&
        !/^[A-Z]+ \/admin\//.test(route),
    );
    expect(served.length).toBeGreaterThan(10);
    expect(undocumented).toEqual([]);
  });

  it.each(Object.keys(CASES).sort())('%s', async (key) => {
    const [method, path] = key.split(' ') as [Method, string];
    const op = doc.paths[path]?.[method.toLowerCase()];
    if (!op) throw new Error(`${key} is not in the document`);
    const cases = await CASES[key](fixtures);
    const first = cases[0];
    expect(first.status === 302 || first.status < 300).toBe(true);
    for (const c of [...cases, ...derivedProbes(op, first)]) {
      if (c.status < 300) checkRequest(key, op, c);
      check(key, op, c, await call(method, path, c));
    }
  });

  it('validates strictly: an undocumented field in a response fails', () => {
    const validate = ajv.compile(
      toJsonSchema(
        doc.paths['/contacts/{id}'].get.responses['200'].content!['application/json'].schema,
      ) as object,
    );
    const contact = {
      id: UNKNOWN_ID,
      email: 'a@example.com',
      subscribed: true,
      suppressed: false,
      data: {},
      createdAt: '2020-01-01T00:00:00.000Z',
      updatedAt: '2020-01-01T00:00:00.000Z',
    };
    expect(validate({ success: true, data: contact })).toBe(true);
    expect(validate({ success: true, data: { ...contact, extra: 1 } })).toBe(false);
    const { suppressed: _omitted, ...missing } = contact;
    expect(validate({ success: true, data: missing })).toBe(false);
    expect(validate(contact)).toBe(false);
  });
});
