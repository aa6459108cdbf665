import { buildRenderContext, TemplateRenderer, TemplateRenderError } from './template-renderer';

describe('TemplateRenderer', () => {
  const renderer = new TemplateRenderer();
  const contact = {
    id: 'c1',
    email: 'ada@example.org',
    subscribed: true,
    data: { name: 'Ada', plan: 'free' },
  };
  const context = (data: Record<string, unknown> = {}) =>
    buildRenderContext({
      email: contact.email,
      contact,
      data,
      unsubscribeUrl: 'https://x.test/u/t',
    });

  it('puts contact data at top level, the send data over it, and reserved names last', async () => {
    const ctx = context({
      plan: 'pro',
      email: 'spoof@example.org',
      extra: { value: 7, persistent: false },
    });
    const out = await renderer.render(
      {
        subject: '{{ name }} {{ plan }} {{ email }}',
        body: '{{ contact.data.plan }} {{ extra }} {{ unsubscribeUrl }}',
      },
      ctx,
    );
    expect(out.subject).toBe('Ada pro ada@example.org');
    expect(out.html).toBe('free 7 https://x.test/u/t');
  });

  it('renders {value, persistent} wrappers as their value, and keeps keys named like Object.prototype members', async () => {
    const ctx = context({
      kept: { value: 'k', persistent: true },
      toString: 'TS',
      valueOf: 'VO',
      ['__proto__']: 'P',
    });
    expect(Object.keys(ctx)).toEqual(
      expect.arrayContaining(['kept', 'toString', 'valueOf', '__proto__']),
    );
    const out = await renderer.render(
      { subject: 's', body: '{{ kept }}|{{ toString }}|{{ valueOf }}' },
      ctx,
    );
    expect(out.html).toBe('k|TS|VO');
  });

  it('escapes variables in HTML bodies but not in subjects; raw opts out', async () => {
    const out = await renderer.render(
      { subject: '{{ v }}', body: '{{ v }}|{{ v | raw }}' },
      { v: '<b>&' },
    );
    expect(out.subject).toBe('<b>&');
    expect(out.html).toBe('&lt;b&gt;&amp;|<b>&');
  });

  it('derives the text part and flattens line breaks out of rendered subjects', async () => {
    const out = await renderer.render(
      {
        subject: 'a{{ nl }}b',
        body: '<h1>Title</h1><p>Body <a href="https://x.test">link</a></p>',
      },
      { nl: '\r\n' },
    );
    expect(out.subject).toBe('a b');
    expect(out.text).toBe('Title\n\nBody link [https://x.test]');
  });

  it('renders markdown after Liquid', async () => {
    const out = await renderer.render(
      { subject: 's', body: '**{{ name }}**', format: 'markdown' },
      { name: 'Ada' },
    );
    expect(out.html.trim()).toBe('<p><strong>Ada</strong></p>');
  });

  it('fails with the part that broke a limit', async () => {
    await expect(
      renderer.render({ subject: 's', body: '{% for i in (1..100000000) %}x{% endfor %}' }, {}),
    ).rejects.toEqual(expect.objectContaining({ part: 'body' }));
    await expect(
      renderer.render({ subject: '{% include "x" %}', body: 'b' }, {}),
    ).rejects.toBeInstanceOf(TemplateRenderError);
  });

  it('validates syntax and unknown filters', () => {
    expect(renderer.validate('{{ a | upcase }}')).toBeNull();
    expect(renderer.validate('{{ a | nope }}')).toMatch(/undefined filter/);
    expect(renderer.validate('{% if %}')).not.toBeNull();
  });

  it('refuses tags that load other files when parsing, naming the tag', () => {
    expect(renderer.validate('{% include "x" %}')).toMatch(/\{% include %\}/);
    expect(renderer.validate('{% for i in (1..2) %}{% render "x" %}{% endfor %}')).toMatch(
      /\{% render %\}/,
    );
    expect(renderer.validate('{% layout "x" %}')).toMatch(/\{% layout %\}/);
    expect(renderer.validate('{% block b %}kept{% endblock %}')).toBeNull();
  });
});
