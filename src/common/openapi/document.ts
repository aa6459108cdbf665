import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, getSchemaPath, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type {
  OperationObject,
  ParameterObject,
  PathsObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { NO_KEY_EXTENSION, REQUEST_CONTENT_EXTENSION } from './decorators';
import { ErrorEnvelopeResponse } from './error-envelope.response';

export const SECURITY_SCHEME = 'bearer';

const DESCRIPTION = [
  'Transactional email, events, contacts, templates, segments and sending domains.',
  '',
  'Every JSON success response is `{"success": true, "data": ...}`; lists put `{items, nextCursor, hasMore, total, totalEstimated}` in `data`.',
  'Every error is the `ErrorEnvelope`. Every response carries `X-Request-Id`; keyed responses carry `RateLimit-Limit`,',
  '`RateLimit-Remaining` and `RateLimit-Reset`. Request bodies refuse unknown fields (422, code `unrecognized_keys`).',
].join('\n');

const KEY_DESCRIPTION =
  'An API key as `Authorization: Bearer <key>`. Secret keys (`sk_…`) work on every endpoint; public keys (`pk_…`) ' +
  'only on `POST /v1/track` and `POST /v1/subscribe` (anything else answers 403 FORBIDDEN), so they may be shipped to browsers. Keys are ' +
  'opaque random strings, not JWTs; create them with `node dist/cli.js keys create <projectId> --type secret|public`.';

const TAGS: Array<[string, string]> = [
  ['send', 'Transactional sending'],
  ['emails', 'The email records of every message'],
  ['contacts', 'Contacts and bulk imports'],
  ['events', 'Tracked and system events'],
  ['segments', 'Saved conditions over contacts'],
  ['templates', 'Liquid templates'],
  ['domains', 'Verified sending domains (DKIM, ownership)'],
  ['project', "The calling key's project"],
  ['unsubscribe', 'Pages for people (HTML), linked from marketing mail'],
  ['health', 'Probes for orchestrators'],
];

const HEADERS = {
  'X-Request-Id': {
    description:
      "The request's id: the caller's X-Request-Id when sane, otherwise generated; also error.requestId",
    required: true,
    schema: { type: 'string' },
  },
  'RateLimit-Limit': {
    description: 'Requests allowed per project per minute',
    required: true,
    schema: { type: 'integer' },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window',
    required: true,
    schema: { type: 'integer' },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the window resets',
    required: true,
    schema: { type: 'integer' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying',
    required: true,
    schema: { type: 'integer' },
  },
} as const;

const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] as const;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** `ContactsController` + `list` → `contacts_list` (operations normally name theirs with @ApiOp). */
export function operationIdFor(controllerKey: string, methodKey: string): string {
  const base = controllerKey.replace(/Controller$/, '');
  return `${base.charAt(0).toLowerCase()}${base.slice(1)}_${methodKey}`;
}

/**
 * The OpenAPI document served at /openapi.json (and exported by
 * scripts/export-openapi.js). Nest's explorer builds it from the decorators in
 * src/common/openapi/decorators.ts; a few things it cannot express are
 * finished here: `security: []` on keyless routes, per-media-type request
 * bodies, the shared response headers, and `additionalProperties: false` on
 * request bodies (the validation pipe refuses unknown fields). Routes that are
 * Fastify's own (no decorators) pass their path items as `rawRoutePaths`.
 */
export function buildOpenApiDocument(
  app: INestApplication,
  rawRoutePaths: PathsObject = {},
): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Mailwright API')
    .setDescription(DESCRIPTION)
    .setVersion('1')
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    .addServer('/', 'The server that serves this document')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', description: KEY_DESCRIPTION },
      SECURITY_SCHEME,
    )
    .addSecurityRequirements(SECURITY_SCHEME);
  for (const [name, description] of TAGS) builder.addTag(name, description);
  const document = SwaggerModule.createDocument(app, builder.build(), {
    operationIdFactory: operationIdFor,
  });
  // Routes registered on Fastify directly (src/engagement/email-tracking.routes.ts) bring their own path items.
  Object.assign(document.paths, structuredClone(rawRoutePaths));
  return finishDocument(document);
}

type Extended = OperationObject & Record<string, unknown>;

export function finishDocument(document: OpenAPIObject): OpenAPIObject {
  document.components ??= {};
  // Nest's addBearerAuth says JWT by default; the keys are opaque strings.
  const scheme = document.components.securitySchemes?.[SECURITY_SCHEME];
  if (scheme && 'bearerFormat' in scheme) delete scheme.bearerFormat;
  document.components.headers = {
    ...(document.components.headers ?? {}),
    ...structuredClone(HEADERS),
  } as never;
  for (const schema of Object.values(document.components.schemas ?? {})) unwrapSingleAllOf(schema);
  nameWildcardParameters(document);
  const strict = new Set<string>();
  for (const item of Object.values(document.paths)) {
    for (const method of METHODS) {
      const op = item[method] as Extended | undefined;
      if (!op) continue;
      const keyless = op[NO_KEY_EXTENSION] === true;
      delete op[NO_KEY_EXTENSION];
      if (keyless) op.security = [];
      documentBadPathIds(op);
      const content = op[REQUEST_CONTENT_EXTENSION] as
        | { description?: string; content: Record<string, SchemaObject | ReferenceObject> }
        | undefined;
      if (content) {
        delete op[REQUEST_CONTENT_EXTENSION];
        op.requestBody = {
          required: true,
          ...(content.description ? { description: content.description } : {}),
          content: Object.fromEntries(
            Object.entries(content.content).map(([type, schema]) => [type, { schema }]),
          ),
        };
      }
      for (const [status, response] of Object.entries(op.responses)) {
        if (!response || '$ref' in response) continue;
        const headers: Record<string, ReferenceObject> = {
          'X-Request-Id': headerRef('X-Request-Id'),
        };
        if (!keyless && /^2/.test(status))
          for (const name of RATE_LIMIT_HEADERS) headers[name] = headerRef(name);
        if (status === '429' || (status === '503' && !keyless))
          headers['Retry-After'] = headerRef('Retry-After');
        (response as ResponseObject).headers = {
          ...headers,
          ...((response as ResponseObject).headers ?? {}),
        };
      }
      const body = op.requestBody && !('$ref' in op.requestBody) ? op.requestBody : undefined;
      const json = body?.content['application/json']?.schema;
      if (json) refuseUnknownFields(document, json, strict);
    }
  }
  return document;
}

const BAD_PATH_ID =
  'BAD_REQUEST: a path parameter is not a UUID (error.errors[0].field names it), or malformed JSON, an unsupported content type or a bad query parameter';

/**
 * Every route with a UUID path parameter answers 400 for one that is not a
 * UUID (IdParamDto); the 400 is documented whether or not the operation's
 * decorators list it, so a new `{id}` route cannot forget it.
 */
function documentBadPathIds(op: OperationObject): void {
  const uuidInPath = (op.parameters ?? []).some(
    (p) =>
      !('$ref' in p) &&
      p.in === 'path' &&
      !!p.schema &&
      !('$ref' in p.schema) &&
      p.schema.format === 'uuid',
  );
  if (!uuidInPath || op.responses['400']) return;
  const responses: OperationObject['responses'] = {
    ...op.responses,
    '400': {
      description: BAD_PATH_ID,
      content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorEnvelopeResponse) } } },
    },
  };
  op.responses = Object.fromEntries(
    Object.keys(responses)
      .sort((x, y) => (x === 'default' ? 1 : y === 'default' ? -1 : Number(x) - Number(y)))
      .map((status) => [status, responses[status]]),
  );
}

/**
 * Nest writes a property typed by a named enum or class as `{allOf: [{$ref}]}`
 * (room for siblings); without siblings that is just the $ref.
 */
function unwrapSingleAllOf(schema: SchemaObject | ReferenceObject): void {
  if ('$ref' in schema) return;
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (
      !('$ref' in property) &&
      Object.keys(property).length === 1 &&
      property.allOf?.length === 1
    ) {
      schema.properties![name] = property.allOf[0];
    } else {
      unwrapSingleAllOf(property);
    }
  }
  if (schema.items) unwrapSingleAllOf(schema.items);
}

function headerRef(name: keyof typeof HEADERS): ReferenceObject {
  return { $ref: `#/components/headers/${name}` };
}

/** Request bodies: every object schema with properties gets `additionalProperties: false`, through $refs. */
function refuseUnknownFields(
  document: OpenAPIObject,
  schema: SchemaObject | ReferenceObject,
  seen: Set<string>,
): void {
  if ('$ref' in schema) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    if (seen.has(name)) return;
    seen.add(name);
    const target = document.components?.schemas?.[name];
    if (target) refuseUnknownFields(document, target, seen);
    return;
  }
  if (schema.properties) {
    schema.additionalProperties ??= false;
    for (const property of Object.values(schema.properties))
      refuseUnknownFields(document, property, seen);
  }
  if (schema.items) refuseUnknownFields(document, schema.items, seen);
  for (const list of [schema.oneOf, schema.anyOf, schema.allOf]) {
    for (const member of list ?? []) refuseUnknownFields(document, member, seen);
  }
}

/**
 * A wildcard route (`@Get('c/*')`, for a parameter longer than the router's
 * limit) comes out as `{path}`; when the operation documents one path
 * parameter of its own with @ApiParam, that name replaces it
 * (`/t/c/{token}`).
 */
function nameWildcardParameters(document: OpenAPIObject): void {
  for (const key of Object.keys(document.paths)) {
    if (!key.endsWith('/{path}')) continue;
    const item = document.paths[key];
    const ops = METHODS.map((m) => item[m] as OperationObject | undefined).filter(
      (op): op is OperationObject => !!op,
    );
    const names = new Set(
      ops.flatMap((op) =>
        (op.parameters ?? [])
          .filter(
            (p): p is ParameterObject =>
              'in' in p && p.in === 'path' && /^\w+$/.test(p.name) && p.name !== 'path',
          )
          .map((p) => p.name),
      ),
    );
    if (names.size !== 1) continue;
    const [name] = [...names];
    for (const op of ops) {
      op.parameters = (op.parameters ?? []).filter(
        (p) => !('in' in p && p.in === 'path' && !names.has(p.name)),
      );
    }
    delete document.paths[key];
    document.paths[`${key.slice(0, -'{path}'.length)}{${name}}`] = item;
  }
}
