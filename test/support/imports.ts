import { pollUntil } from './poll';
import type { InjectResult, TestApp } from './test-app';

/** POST /contacts/import: a `{contacts: [...]}` object, or CSV text with a text/csv content type. */
export function postImport(
  app: TestApp,
  key: string,
  body: unknown,
  headers?: Record<string, string>,
): Promise<InjectResult> {
  return app.request({ method: 'POST', url: '/contacts/import', key, body, headers });
}

/** GET /contacts/imports/{id} until the import is COMPLETED or FAILED; its last view either way. */
export async function waitForImport(
  app: TestApp,
  key: string,
  id: string,
  timeoutMs = 30_000,
  intervalMs = 50,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the e2e assertions read fields directly
): Promise<any> {
  return pollUntil(
    async () =>
      (await app.request({ method: 'GET', url: `/contacts/imports/${id}`, key })).body.data,
    (view) => view.status === 'COMPLETED' || view.status === 'FAILED',
    timeoutMs,
    intervalMs,
  );
}
