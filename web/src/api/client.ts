import createClient, { type Middleware } from 'openapi-fetch';
import type { paths, SchemaErrorEnvelope } from './schema';

/**
 * The one way the dashboard talks to the service: the public REST API, typed from its
 * /openapi.json. The session cookie goes along (same origin); every state-changing call carries
 * the CSRF token GET /session gave, which lives only in memory (never in browser storage).
 */
let csrfToken: string | null = null;
let sessionKnown: () => void = () => undefined;
/**
 * Settles once GET /session has answered (or a sign-in did): pages start their calls while the
 * session is still being read, so a state-changing one (a template preview) waits here for its token.
 */
const csrfKnown = new Promise<void>((resolve) => (sessionKnown = resolve));

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
  sessionKnown();
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Raised by unwrap(): the API's own words (`message`), its status and code. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: string,
    readonly fieldErrors: { field: string; message: string }[] = [],
  ) {
    super(message);
  }
}

const csrf: Middleware = {
  async onRequest({ request }) {
    if (SAFE.has(request.method)) return request;
    await csrfKnown;
    if (csrfToken) request.headers.set('X-CSRF-Token', csrfToken);
    return request;
  },
  onResponse({ response }) {
    // A session that ended (idle, signed out elsewhere, key revoked): back to the sign-in page.
    if (response.status === 401) window.dispatchEvent(new Event('mw:signed-out'));
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'include' });
api.use(csrf);

type Result<T> = { data?: T; error?: unknown; response: Response };

/** The `data` of a success envelope, or an ApiError carrying the API's message. */
export async function unwrap<T>(call: Promise<Result<T>>): Promise<T> {
  let result: Result<T>;
  try {
    result = await call;
  } catch (cause) {
    throw new ApiError(
      `The service could not be reached (${cause instanceof Error ? cause.message : String(cause)})`,
      0,
    );
  }
  const { data, error, response } = result;
  if (!response.ok || error !== undefined) throw errorOf(error, response);
  return data as T;
}

function errorOf(body: unknown, response: Response): ApiError {
  const envelope = (typeof body === 'object' && body ? body : {}) as Partial<SchemaErrorEnvelope>;
  const detail = envelope.error;
  const message =
    detail?.message ??
    envelope.message ??
    `The service answered ${response.status} ${response.statusText}`.trim();
  const fields = (detail?.errors ?? []).map((e) => ({ field: e.field, message: e.message }));
  return new ApiError(message, response.status, detail?.code, fields);
}
