/** Default guidance per error code; every error envelope carries a non-empty suggestion. */
export const DEFAULT_SUGGESTIONS: Record<string, string> = {
  BAD_REQUEST:
    'Check the request syntax, content type and query parameters against the API reference at /docs.',
  MISSING_API_KEY: 'Send the header "Authorization: Bearer <API key>".',
  INVALID_API_KEY:
    'Check the API key; it may have been revoked. Create a new one with the CLI if needed.',
  FORBIDDEN:
    'Public (pk_) keys may only call POST /v1/track and POST /v1/subscribe; use a secret (sk_) key.',
  PROJECT_DISABLED:
    'This project is disabled; an operator can enable it with "projects enable <id>".',
  DOMAIN_NOT_VERIFIED:
    'Add the sender domain with POST /domains and publish its DNS records until it is VERIFIED.',
  SENDING_PAUSED:
    'Sender health is PAUSED: check GET /project/health, clean the list, then POST /project/health/resume. Transactional mail still goes.',
  ROUTE_NOT_FOUND: 'Check the method and path against the API reference at /docs.',
  CONFLICT: 'The resource already exists or its current state does not allow this operation.',
  IDEMPOTENCY_KEY_REUSED: 'Use a new Idempotency-Key for a different request body.',
  PAYLOAD_TOO_LARGE: 'Send a smaller body: 10 MB on /v1/send, 1 MB elsewhere.',
  VALIDATION_ERROR: 'Fix the fields listed in error.errors and retry.',
  RATE_LIMIT_EXCEEDED: 'Wait for the number of seconds in the Retry-After header, then retry.',
  TIMEOUT:
    'Retry after the number of seconds in the Retry-After header; if it keeps timing out, ask for less at once (a narrower segment condition, a smaller page or batch).',
  INTERNAL_ERROR: 'Retry later; if it persists, report the requestId to the operator.',
  SERVICE_UNAVAILABLE: 'Retry later.',
};

export function defaultSuggestion(code: string): string {
  if (DEFAULT_SUGGESTIONS[code]) return DEFAULT_SUGGESTIONS[code];
  if (code.endsWith('_NOT_FOUND'))
    return 'Check the id; resources of another project are not visible with this key.';
  return 'Check the request against the API reference at /docs.';
}

export function codeForStatus(status: number): string {
  switch (status) {
    case 400:
      return 'BAD_REQUEST';
    case 401:
      return 'INVALID_API_KEY';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'ROUTE_NOT_FOUND';
    case 409:
      return 'CONFLICT';
    case 413:
      return 'PAYLOAD_TOO_LARGE';
    case 422:
      return 'VALIDATION_ERROR';
    case 429:
      return 'RATE_LIMIT_EXCEEDED';
    case 503:
      return 'SERVICE_UNAVAILABLE';
    default:
      return status >= 500 ? 'INTERNAL_ERROR' : 'BAD_REQUEST';
  }
}
