import { postImport, waitForImport } from './support/imports';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

describe('Contact imports', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let p: TestProject;

  beforeAll(async () => {
    env = await setupTestApp({ APP_ROLE: 'all', IMPORT_BATCH_SIZE: '500' });
    app = env.app;
    p = await app.createProject('Imports');
  });
  afterAll(async () => env?.close());

  const finished = (id: string, key = p.secretKey) => waitForImport(app, key, id);

  it('imports 5,000 JSON rows, reporting the 3 bad ones by row and importing the rest', async () => {
    const bad = new Map([
      [17, 'not-an-email'],
      [2500, 'missing-at.example.com'],
      [4999, ''],
    ]);
    const contacts = Array.from({ length: 5000 }, (_, i) => {
      const row = i + 1;
      return bad.has(row)
        ? { email: bad.get(row) }
        : {
            email: `Person${row}@Import.Example`,
            data: { row },
            ...(row % 10 === 0 ? { subscribed: false } : {}),
          };
    });
    const res = await postImport(app, p.secretKey, { contacts });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({
      total: 5000,
      processed: 0,
      created: 0,
      updated: 0,
      failed: 0,
      errors: [],
    });
    expect(['QUEUED', 'PROCESSING', 'COMPLETED']).toContain(res.body.data.status);

    const result = await finished(res.body.data.id);
    expect(result).toMatchObject({
      status: 'COMPLETED',
      total: 5000,
      processed: 5000,
      created: 4997,
      updated: 0,
      failed: 3,
    });
    expect(
      result.errors.map((e: { row: number; field: string; code: string }) => [
        e.row,
        e.field,
        e.code,
      ]),
    ).toEqual([
      [17, 'email', 'invalid_string'],
      [2500, 'email', 'invalid_string'],
      [4999, 'email', 'required'],
    ]);
    const list = await app.request({ method: 'GET', url: '/contacts?limit=1', key: p.secretKey });
    expect(list.body.data.total).toBe(4997);
    const one = await app.request({
      method: 'GET',
      url: '/contacts?email=person20@import.example',
      key: p.secretKey,
    });
    expect(one.body.data.items[0]).toMatchObject({ subscribed: false, data: { row: 20 } });
    const unsub = await app.request({
      method: 'GET',
      url: '/contacts?subscribed=false&limit=1',
      key: p.secretKey,
    });
    // Every tenth row unsubscribed, except row 2500, which is one of the bad ones.
    expect(unsub.body.data.total).toBe(499);
  });

  it('updates existing contacts (merge, subscription only when given) and folds duplicates within the file', async () => {
    await app.request({
      method: 'POST',
      url: '/contacts',
      key: p.secretKey,
      body: { email: 'exists@example.com', subscribed: false, data: { a: 1, b: 2 } },
    });
    const res = await postImport(app, p.secretKey, {
      contacts: [
        { email: 'EXISTS@example.com', data: { b: null, c: 3 } },
        { email: 'twice@example.com', data: { x: 1 } },
        { email: 'twice@example.com', subscribed: false, data: { y: 2 } },
        { email: 'x@example.com', extra: true },
        'not an object',
      ],
    });
    const result = await finished(res.body.data.id);
    expect(result).toMatchObject({
      status: 'COMPLETED',
      total: 5,
      processed: 5,
      created: 1,
      updated: 2,
      failed: 2,
    });
    expect(result.errors.map((e: { row: number; code: string }) => [e.row, e.code])).toEqual([
      [4, 'unrecognized_keys'],
      [5, 'invalid_type'],
    ]);
    const exists = await app.request({
      method: 'GET',
      url: '/contacts?email=exists@example.com',
      key: p.secretKey,
    });
    expect(exists.body.data.items[0]).toMatchObject({ subscribed: false, data: { a: 1, c: 3 } });
    const twice = await app.request({
      method: 'GET',
      url: '/contacts?email=twice@example.com',
      key: p.secretKey,
    });
    expect(twice.body.data.items[0]).toMatchObject({ subscribed: false, data: { x: 1, y: 2 } });
  });

  it('applies each row to its own existing contact: a given subscription and null keys, whatever the row order', async () => {
    // Rows in reverse email order, so the statement's (email) write order differs from the input order.
    const emails = Array.from(
      { length: 40 },
      (_, i) => `own${String(i).padStart(2, '0')}@example.com`,
    );
    for (const [i, email] of emails.entries()) {
      await app.request({
        method: 'POST',
        url: '/contacts',
        key: p.secretKey,
        body: { email, subscribed: i % 2 === 0, data: { keep: i, drop: i } },
      });
    }
    const res = await postImport(app, p.secretKey, {
      contacts: [...emails.entries()].reverse().map(([i, email]) => ({
        email,
        ...(i % 3 === 0 ? { subscribed: i % 2 !== 0 } : {}),
        data: { drop: null, mine: email },
      })),
    });
    expect(await finished(res.body.data.id)).toMatchObject({
      status: 'COMPLETED',
      created: 0,
      updated: 40,
      failed: 0,
    });
    const listed = await app.request({
      method: 'GET',
      url: '/contacts?search=own&limit=100',
      key: p.secretKey,
    });
    const byEmail = new Map<string, { subscribed: boolean; data: unknown }>(
      listed.body.data.items.map((c: { email: string; subscribed: boolean; data: unknown }) => [
        c.email,
        c,
      ]),
    );
    for (const [i, email] of emails.entries()) {
      expect({ email, ...byEmail.get(email) }).toMatchObject({
        email,
        // Every third row flips the subscription; the others keep it.
        subscribed: i % 3 === 0 ? i % 2 !== 0 : i % 2 === 0,
        data: { keep: i, mine: email },
      });
      expect(byEmail.get(email)?.data).not.toHaveProperty('drop');
    }
  });

  it('imports CSV: email column in any case, subscribed column, other columns into data, errors by line', async () => {
    const q = await app.createProject('Csv');
    const csv = [
      'Email,First Name,subscribed,plan',
      'ada@example.com,Ada,true,pro',
      '"Grace@Example.com","Hopper, Grace",false,',
      'broken-address,Nope,true,free',
      '',
      'linus@example.com,"Linus ""T""",,free',
    ].join('\r\n');
    const res = await postImport(app, q.secretKey, csv, { 'content-type': 'text/csv' });
    expect(res.status).toBe(202);
    expect(res.body.data.total).toBe(4);
    const result = await finished(res.body.data.id, q.secretKey);
    expect(result).toMatchObject({ status: 'COMPLETED', created: 3, failed: 1 });
    expect(result.errors).toEqual([
      {
        row: 3,
        line: 4,
        email: 'broken-address',
        field: 'email',
        code: 'invalid_string',
        message: expect.any(String),
      },
    ]);
    const list = await app.request({ method: 'GET', url: '/contacts?limit=10', key: q.secretKey });
    const byEmail = Object.fromEntries(
      list.body.data.items.map((c: { email: string }) => [c.email, c]),
    );
    expect(byEmail['ada@example.com']).toMatchObject({
      subscribed: true,
      data: { 'First Name': 'Ada', plan: 'pro' },
    });
    expect(byEmail['grace@example.com']).toMatchObject({
      subscribed: false,
      data: { 'First Name': 'Hopper, Grace' },
    });
    expect(byEmail['linus@example.com']).toMatchObject({
      subscribed: true,
      data: { 'First Name': 'Linus "T"', plan: 'free' },
    });
  });

  it('refuses bodies that are not an import (422/400) and accepts up to 10,000 JSON rows', async () => {
    const post = (body: unknown, headers?: Record<string, string>) =>
      postImport(app, p.secretKey, body, headers);
    expect((await post({ contacts: [] })).body.error.errors[0]).toMatchObject({
      field: 'contacts',
      code: 'too_small',
    });
    expect((await post({})).body.error.errors[0]).toMatchObject({
      field: 'contacts',
      code: 'required',
    });
    expect((await post({ contacts: {} })).body.error.errors[0]).toMatchObject({
      field: 'contacts',
      code: 'invalid_type',
    });
    expect(
      (await post({ contacts: [{ email: 'a@b.co' }], x: 1 })).body.error.errors[0],
    ).toMatchObject({ field: 'x', code: 'unrecognized_keys' });
    const tooMany = await post({
      contacts: Array.from({ length: 10_001 }, (_, i) => ({ email: `t${i}@example.com` })),
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error.errors[0]).toMatchObject({ field: 'contacts', code: 'too_big' });
    const noEmailColumn = await post('name,plan\nada,pro', { 'content-type': 'text/csv' });
    expect(noEmailColumn.status).toBe(422);
    expect(noEmailColumn.body.error.errors[0]).toMatchObject({ field: 'email', code: 'required' });
    const unparsable = await post('email,name\n"unterminated,x', { 'content-type': 'text/csv' });
    expect(unparsable.status).toBe(400);
    expect(unparsable.body.error.code).toBe('BAD_REQUEST');
  });

  it('keeps imports private to their project; GET /contacts/imports/{id} is not taken for a contact id', async () => {
    const res = await postImport(app, p.secretKey, { contacts: [{ email: 'mine@example.com' }] });
    const id = res.body.data.id;
    expect(
      (await app.request({ method: 'GET', url: `/contacts/imports/${id}`, key: p.secretKey }))
        .status,
    ).toBe(200);
    const other = await app.createProject('Other');
    const foreign = await app.request({
      method: 'GET',
      url: `/contacts/imports/${id}`,
      key: other.secretKey,
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('IMPORT_NOT_FOUND');
    expect(
      (await app.request({ method: 'GET', url: `/contacts/${id}`, key: p.secretKey })).body.error
        .code,
    ).toBe('CONTACT_NOT_FOUND');
    expect((await postImport(app, p.publicKey, { contacts: [{ email: 'a@b.co' }] })).status).toBe(
      403,
    );
  });
});
