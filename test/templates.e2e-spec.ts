import { DataSource } from 'typeorm';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

describe('Templates', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;
  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    app.request({ method, url, key: project.secretKey, body });

  beforeAll(async () => {
    ctx = await setupTestApp();
    app = ctx.app;
    project = await app.createProject('Templates');
  });

  afterAll(async () => ctx?.close());

  it('creates, reads, updates and deletes a template', async () => {
    const created = await req('POST', '/templates', {
      name: 'Welcome',
      subject: 'Welcome {{ firstName }}',
      body: '<p>Hi {{ firstName }}</p>',
      type: 'TRANSACTIONAL',
      from: 'Hello@Acme.test',
      fromName: 'Acme',
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      name: 'Welcome',
      type: 'TRANSACTIONAL',
      from: 'hello@acme.test',
      fromName: 'Acme',
      replyTo: null,
    });
    const id = created.body.data.id;
    expect((await req('GET', `/templates/${id}`)).body.data).toEqual(created.body.data);

    const updated = await req('PATCH', `/templates/${id}`, {
      subject: 'Hello {{ firstName }}',
      from: null,
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({
      subject: 'Hello {{ firstName }}',
      from: null,
      body: '<p>Hi {{ firstName }}</p>',
    });

    const other = await app.createProject('Other');
    const foreign = await app.request({
      method: 'GET',
      url: `/templates/${id}`,
      key: other.secretKey,
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('TEMPLATE_NOT_FOUND');

    expect((await req('DELETE', `/templates/${id}`)).body.data).toEqual({ id, deleted: true });
    expect((await req('GET', `/templates/${id}`)).status).toBe(404);
  });

  it('deletes a template once: of 50 concurrent DELETEs one answers 200, the rest 404 TEMPLATE_NOT_FOUND', async () => {
    const created = await req('POST', '/templates', {
      name: 'Once',
      subject: 's',
      body: 'b',
      type: 'TRANSACTIONAL',
    });
    const id = created.body.data.id;
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => req('DELETE', `/templates/${id}`)),
    );
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0].body.data).toEqual({ id, deleted: true });
    const rest = answers.filter((a) => a.status !== 200);
    expect(rest.map((a) => a.status)).toEqual(Array(49).fill(404));
    expect(new Set(rest.map((a) => a.body.error.code))).toEqual(new Set(['TEMPLATE_NOT_FOUND']));
  });

  it('does not bring back a template deleted during a PATCH: the PATCH answers 404', async () => {
    const created = await req('POST', '/templates', {
      name: 'Gone',
      subject: 's',
      body: 'b',
      type: 'TRANSACTIONAL',
    });
    const id = created.body.data.id;
    const [patched, deleted] = await Promise.all([
      req('PATCH', `/templates/${id}`, { name: 'Renamed' }),
      req('DELETE', `/templates/${id}`),
    ]);
    expect(deleted.status).toBe(200);
    expect([200, 404]).toContain(patched.status);
    expect((await req('GET', `/templates/${id}`)).status).toBe(404);
  });

  it('refuses Liquid that does not parse (422 invalid_template on subject or body), on create and update', async () => {
    const bad = await req('POST', '/templates', {
      name: 'Bad',
      subject: 'Hi {{ name',
      body: '{% for %}',
      type: 'MARKETING',
    });
    expect(bad.status).toBe(422);
    const fields = bad.body.error.errors.map(
      (e: { field: string; code: string }) => `${e.field}:${e.code}`,
    );
    expect(fields).toEqual(
      expect.arrayContaining(['subject:invalid_template', 'body:invalid_template']),
    );

    const unknownFilter = await req('POST', '/templates', {
      name: 'F',
      subject: 's',
      body: '{{ x | nosuchfilter }}',
      type: 'MARKETING',
    });
    expect(unknownFilter.status).toBe(422);

    const ok = await req('POST', '/templates', {
      name: 'Ok',
      subject: 's',
      body: 'b',
      type: 'MARKETING',
    });
    const patch = await req('PATCH', `/templates/${ok.body.data.id}`, {
      body: '{% if x %}unclosed',
    });
    expect(patch.status).toBe(422);
    expect(patch.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_template' });

    const badType = await req('POST', '/templates', {
      name: 'T',
      subject: 's',
      body: 'b',
      type: 'PROMO',
    });
    expect(badType.body.error.errors[0]).toMatchObject({
      field: 'type',
      code: 'invalid_enum_value',
    });
  });

  it('PATCH refuses null for name, subject, body and type (422, not a 500); sender fields may be cleared', async () => {
    const tpl = await req('POST', '/templates', {
      name: 'N',
      subject: 's',
      body: 'b',
      type: 'MARKETING',
      replyTo: 'r@acme.test',
    });
    const id = tpl.body.data.id;
    for (const field of ['name', 'subject', 'body', 'type']) {
      const res = await req('PATCH', `/templates/${id}`, { [field]: null });
      expect(res.status).toBe(422);
      expect(res.body.error.errors).toEqual([expect.objectContaining({ field, code: 'required' })]);
    }
    const cleared = await req('PATCH', `/templates/${id}`, { fromName: null, replyTo: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toMatchObject({
      name: 'N',
      subject: 's',
      body: 'b',
      type: 'MARKETING',
      fromName: null,
      replyTo: null,
    });
  });

  it('lists newest first with type and name filters and cursor pagination', async () => {
    const p = await app.createProject('Listing');
    const make = (name: string, type: string) =>
      app.request({
        method: 'POST',
        url: '/templates',
        key: p.secretKey,
        body: { name, subject: 's', body: 'b', type },
      });
    for (const [name, type] of [
      ['Alpha news', 'MARKETING'],
      ['Beta receipt', 'TRANSACTIONAL'],
      ['Gamma news', 'MARKETING'],
    ]) {
      await make(name, type);
    }
    const list = (q: string) =>
      app.request({ method: 'GET', url: `/templates${q}`, key: p.secretKey });
    const all = await list('');
    expect(all.body.data.items.map((t: { name: string }) => t.name)).toEqual([
      'Gamma news',
      'Beta receipt',
      'Alpha news',
    ]);
    expect(all.body.data.total).toBe(3);
    const marketing = await list('?type=MARKETING');
    expect(marketing.body.data.items.map((t: { name: string }) => t.name)).toEqual([
      'Gamma news',
      'Alpha news',
    ]);
    const search = await list('?search=NEWS&limit=1');
    expect(search.body.data).toMatchObject({ total: 2, hasMore: true });
    const next = await list(`?search=news&limit=1&cursor=${search.body.data.nextCursor}`);
    expect(next.body.data.items.map((t: { name: string }) => t.name)).toEqual(['Alpha news']);
    expect(next.body.data.hasMore).toBe(false);
    expect((await list('?search=%25')).body.data.total).toBe(0);
    expect((await list('?cursor=garbage')).status).toBe(400);
    expect((await list('?type=OTHER')).status).toBe(400);
  });

  it("previews with a contact's data and the request data over it", async () => {
    const tpl = await req('POST', '/templates', {
      name: 'Preview',
      subject: 'Hi {{ firstName }} from {{ city }}',
      body: '<p>{{ email }} {{ contact.data.city }} {{ plan }} <a href="{{ unsubscribeUrl }}">u</a></p>',
      type: 'MARKETING',
    });
    const contact = await req('POST', '/contacts', {
      email: 'pre@example.org',
      data: { firstName: 'Ada', city: 'Oslo', plan: 'free' },
    });
    expect(contact.status).toBe(201);
    const preview = await req('POST', `/templates/${tpl.body.data.id}/preview`, {
      contactId: contact.body.data.id,
      data: { plan: 'pro' },
    });
    expect(preview.status).toBe(200);
    expect(preview.body.data.subject).toBe('Hi Ada from Oslo');
    expect(preview.body.data.html).toContain('pre@example.org Oslo pro');
    expect(preview.body.data.text).toContain('pre@example.org Oslo pro');
    const sample = await req('POST', `/templates/${tpl.body.data.id}/preview`, {
      data: { firstName: 'Sam' },
    });
    expect(sample.body.data.subject).toBe('Hi Sam from');
    const missing = await req('POST', `/templates/${tpl.body.data.id}/preview`, {
      contactId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('CONTACT_NOT_FOUND');
    // Another project's contact is not found either (never a 500, never its data).
    const other = await app.createProject('Preview other');
    const foreign = await app.request({
      method: 'POST',
      url: '/contacts',
      key: other.secretKey,
      body: { email: 'theirs@example.org', data: { firstName: 'Eve' } },
    });
    const leaked = await req('POST', `/templates/${tpl.body.data.id}/preview`, {
      contactId: foreign.body.data.id,
    });
    expect(leaked.status).toBe(404);
    expect(leaked.body.error.code).toBe('CONTACT_NOT_FOUND');
    expect(leaked.raw).not.toContain('Eve');
  });

  it('previews an unsaved subject and body in place of the stored ones, checked like a save', async () => {
    const tpl = await req('POST', '/templates', {
      name: 'Draft preview',
      subject: 'Stored {{ firstName }}',
      body: '<p>stored</p>',
      type: 'MARKETING',
    });
    const id = tpl.body.data.id;
    const draft = await req('POST', `/templates/${id}/preview`, {
      subject: 'Draft for {{ firstName }}',
      body: '<p>draft {{ plan }}</p>',
      data: { firstName: 'Ada', plan: 'pro' },
    });
    expect(draft.status).toBe(200);
    expect(draft.body.data.subject).toBe('Draft for Ada');
    expect(draft.body.data.html).toContain('draft pro');
    // Only the body given: the stored subject.
    const half = await req('POST', `/templates/${id}/preview`, { body: '<p>b</p>' });
    expect(half.body.data.subject).toBe('Stored');
    // Liquid that does not parse: 422 invalid_template on the field, its message naming the line.
    const broken = await req('POST', `/templates/${id}/preview`, {
      body: '<p>one</p>\n{% if x %}\n<p>never closed</p>',
    });
    expect(broken.status).toBe(422);
    expect(broken.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_template' });
    expect(broken.body.error.errors[0].message).toMatch(/line:2/);
    expect((await req('POST', `/templates/${id}/preview`, { subject: 'a\nb' })).status).toBe(422);
    // Nothing was saved.
    const stored = await req('GET', `/templates/${id}`);
    expect(stored.body.data).toMatchObject({
      subject: 'Stored {{ firstName }}',
      body: '<p>stored</p>',
    });
  });

  it('preview keeps data keys named like Object.prototype members, and refuses data that is not an object', async () => {
    const tpl = await req('POST', '/templates', {
      name: 'Keys',
      subject: '{{ hasOwnProperty }}',
      body: '[{{ toString }}|{{ valueOf }}]',
      type: 'TRANSACTIONAL',
    });
    const preview = await req('POST', `/templates/${tpl.body.data.id}/preview`, {
      data: { toString: 'TS', valueOf: 'VO', hasOwnProperty: 'H' },
    });
    expect(preview.status).toBe(200);
    expect(preview.body.data).toMatchObject({ subject: 'H', html: '[TS|VO]' });
    const array = await req('POST', `/templates/${tpl.body.data.id}/preview`, { data: ['x'] });
    expect(array.status).toBe(422);
    expect(array.body.error.errors[0]).toMatchObject({ field: 'data', code: 'invalid_type' });
  });

  it('renders in a sandbox: no prototype access, bounded time and memory', async () => {
    const create = (body: string) =>
      req('POST', '/templates', { name: 'S', subject: 's', body, type: 'TRANSACTIONAL' });
    const preview = async (body: string) => {
      const tpl = await create(body);
      expect(tpl.status).toBe(201);
      return req('POST', `/templates/${tpl.body.data.id}/preview`, {});
    };
    const proto = await preview('[{{ email.constructor }}{{ contact.__proto__ }}]');
    expect(proto.status).toBe(200);
    expect(proto.body.data.html).toBe('[]');
    const huge = await preview('{% for i in (1..100000000) %}x{% endfor %}');
    expect(huge.status).toBe(422);
    expect(huge.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_template' });
    // Past RENDER_TIMEOUT_MS with empty data: refused when saved, not first at a send. Each of the
    // 9M iterations runs filters (empty loops alone finished under 2 s on a quiet fast machine).
    const slow = await create(
      '{% for i in (1..3000) %}{% for j in (1..3000) %}{% assign k = j | plus: i | times: 3 | modulo: 7 %}{% endfor %}{% endfor %}',
    );
    expect(slow.status).toBe(422);
    expect(slow.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_template' });
    expect(slow.body.error.errors[0].message).toMatch(/took longer than 2000 ms/);
  });
  it('refuses tags that load other files wherever Liquid is saved or rendered: 422 invalid_template naming the tag', async () => {
    const refused = (
      res: {
        status: number;
        body: { error?: { errors?: { field: string; code: string; message: string }[] } };
      },
      tag: string,
    ) => {
      expect(res.status).toBe(422);
      expect(res.body.error?.errors).toEqual([
        expect.objectContaining({
          code: 'invalid_template',
          message: expect.stringContaining(`{% ${tag} %}`),
        }),
      ]);
    };
    const sources: [string, string][] = [
      ['include', '{% include "/etc/passwd" %}'],
      ['render', 'Hi {% render "footer", name: name %}'],
      ['layout', '{% layout "base" %}{% block x %}y{% endblock %}'],
      ['include', '{% if a %}{%- include footer -%}{% endif %}'],
      ['render', '{% liquid\n  render "x"\n%}'],
    ];
    for (const [tag, source] of sources) {
      refused(
        await req('POST', '/templates', {
          name: 'T',
          subject: 's',
          body: source,
          type: 'TRANSACTIONAL',
        }),
        tag,
      );
    }
    refused(
      await req('POST', '/templates', {
        name: 'T',
        subject: '{% include "s" %}',
        body: 'b',
        type: 'TRANSACTIONAL',
      }),
      'include',
    );
    const tpl = await req('POST', '/templates', {
      name: 'T',
      subject: 's',
      body: 'b',
      type: 'TRANSACTIONAL',
    });
    refused(
      await req('PATCH', `/templates/${tpl.body.data.id}`, { body: '{% render "x" %}' }),
      'render',
    );

    const campaign = {
      name: 'C',
      subject: 's',
      body: 'b',
      from: 'news@acme.test',
      audienceType: 'ALL',
    };
    refused(await req('POST', '/campaigns', { ...campaign, body: '{% include "x" %}' }), 'include');
    refused(
      await req('POST', '/campaigns', { ...campaign, subject: '{% render "x" %}' }),
      'render',
    );
    const draft = await req('POST', '/campaigns', campaign);
    expect(draft.status).toBe(201);
    refused(
      await req('PATCH', `/campaigns/${draft.body.data.id}`, { body: '{% layout "x" %}' }),
      'layout',
    );

    const hook = (step: Record<string, unknown>) =>
      req('POST', '/workflows', {
        name: 'W',
        trigger: { type: 'MANUAL' },
        steps: [
          {
            id: 'hook',
            type: 'WEBHOOK',
            url: 'https://hooks.example.org/x',
            method: 'POST',
            ...step,
          },
        ],
      });
    refused(await hook({ body: '{"a":"{% include "x" %}"}' }), 'include');
    refused(await hook({ headers: { 'x-a': '{% render "x" %}' } }), 'render');

    refused(
      await req('POST', '/v1/send', {
        to: 'x@example.org',
        from: 'hello@acme.test',
        subject: 's',
        body: '{% include "x" %}',
      }),
      'include',
    );

    // A template stored before the check answers the same 422 at preview rather than a file lookup error.
    await ctx.app.app
      .get(DataSource)
      .query(`UPDATE templates SET body = '{% include "/etc/passwd" %}' WHERE id = $1`, [
        tpl.body.data.id,
      ]);
    const preview = await req('POST', `/templates/${tpl.body.data.id}/preview`, {});
    refused(preview, 'include');
    expect(preview.raw).not.toContain('root:');
  });
});
