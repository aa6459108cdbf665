import { LiquidSandbox, PARSED_CACHE_CHARS } from './liquid-sandbox';
import {
  buildRenderContext,
  INLINE_PARSE_CHARS,
  TemplateRenderer,
  TemplateRenderError,
} from './template-renderer';

describe('TemplateRenderer', () => {
  const renderer = new TemplateRenderer({ timeoutMs: 1000 });
  afterAll(() => renderer.onApplicationShutdown());
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

  it('parses a long source on a thread, with the same answer as parsing it in place', async () => {
    type WithPool = { pool: { completed: number } | null };
    const long = '<p>{{ contact.email }}</p>'.repeat(2_000);
    const broken = `${long}{% for x in y %}`;
    expect(long.length).toBeGreaterThan(INLINE_PARSE_CHARS);
    await renderer.render({ subject: 's', body: 'b' }, context());
    const before = (renderer as unknown as WithPool).pool?.completed ?? 0;
    expect(await renderer.parseError(long)).toBeNull();
    const error = await renderer.parseError(broken);
    expect(error).toBe(new LiquidSandbox().validate(broken));
    expect(error).toMatch(/not closed/);
    expect((renderer as unknown as WithPool).pool?.completed).toBe(before + 2);
    // A short one is parsed in place: no thread task.
    expect(await renderer.parseError('{% if %}')).toMatch(/.+/);
    expect((renderer as unknown as WithPool).pool?.completed).toBe(before + 2);
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

  it('stops a render inside one filter call at the deadline, naming the part, and the event loop stays free', async () => {
    // liquidjs checks its own time limit only between nodes: this one filter call ran 15-21 s.
    const slow = '{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}';
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 10);
    const started = Date.now();
    try {
      await expect(renderer.render({ subject: 's', body: slow }, {})).rejects.toEqual(
        expect.objectContaining({ part: 'body', message: 'rendering took longer than 1000 ms' }),
      );
      await expect(renderer.render({ subject: slow, body: 'b' }, {})).rejects.toEqual(
        expect.objectContaining({ part: 'subject' }),
      );
      await expect(renderer.renderText(slow, {})).rejects.toBeInstanceOf(TemplateRenderError);
    } finally {
      clearInterval(ticker);
    }
    // The calling thread kept running its timers while the renders were stopped.
    expect(ticks).toBeGreaterThan((Date.now() - started) / 10 / 4);
    // The pool replaced the stopped threads: the next render works.
    await expect(
      renderer.render({ subject: 'ok', body: '<p>{{ 1 | plus: 1 }}</p>' }, {}),
    ).resolves.toMatchObject({
      subject: 'ok',
      html: '<p>2</p>',
    });
  });

  it('answers HTML too deep to convert and pathological Markdown with a render error, never a crash', async () => {
    const deep = '<ul><li>'.repeat(40_000) + 'x';
    await expect(renderer.render({ subject: 's', body: deep }, {})).rejects.toBeInstanceOf(
      TemplateRenderError,
    );
    const stars = '*a'.repeat(200_000);
    await expect(
      renderer.render({ subject: 's', body: stars, format: 'markdown' }, {}),
    ).rejects.toEqual(expect.objectContaining({ part: 'body' }));
  });

  it("keeps a thread for other projects while one project's renders run to their deadline", async () => {
    const slow = '{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}';
    const shared = new TemplateRenderer({ timeoutMs: 5000, threads: 2 });
    try {
      const settled: string[] = [];
      const hostile = Array.from({ length: 3 }, (_, i) =>
        shared.render({ subject: 's', body: slow }, {}, 'project-a').catch(() => {
          settled.push(`a${i}`);
        }),
      );
      const other = shared
        .render({ subject: 'Hi {{ n }}', body: '<b>{{ n }}</b>' }, { n: 1 }, 'project-b')
        .then((r) => settled.push(`b:${r.subject}`));
      await Promise.all([...hostile, other]);
      // Queued first come first served, b would wait for a0 and a1 to be stopped, 5 s each.
      expect(settled[0]).toBe('b:Hi 1');
    } finally {
      await shared.onApplicationShutdown();
    }
  }, 30_000);

  it('fails only the render that ran past its deadline when renders of one source go to a thread together', async () => {
    const source = {
      subject: 'Hi {{ n }}',
      body: '{% if slow %}{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}{% endif %}<b>{{ n }}</b>',
    };
    const settled = await Promise.allSettled(
      Array.from({ length: 7 }, (_, i) => renderer.render(source, { n: i, slow: i === 3 })),
    );
    expect(settled.map((s) => s.status)).toEqual([
      ...Array(3).fill('fulfilled'),
      'rejected',
      ...Array(3).fill('fulfilled'),
    ]);
    expect((settled[3] as PromiseRejectedResult).reason).toEqual(
      expect.objectContaining({ part: 'body', message: 'rendering took longer than 1000 ms' }),
    );
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.html : null))).toEqual(
      [0, 1, 2, null, 4, 5, 6].map((n) => (n === null ? null : `<b>${n}</b>`)),
    );
  }, 20_000);

  it('renders many messages at once, each with its own context', async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        renderer.render({ subject: 'Hi {{ n }}', body: '<b>{{ n }}</b>' }, { n: i }),
      ),
    );
    expect(results.map((r) => r.subject)).toEqual(Array.from({ length: 50 }, (_, i) => `Hi ${i}`));
  });
});

describe('LiquidSandbox parsed-template cache', () => {
  it('is bounded by the characters of its sources, not by a count', async () => {
    const sandbox = new LiquidSandbox();
    const big = (i: number) => `{{ ${i} }}` + 'x'.repeat(900_000);
    for (let i = 0; i < 20; i++) await sandbox.render({ subject: 's', body: big(i) }, {});
    expect(sandbox.cacheSize.chars).toBeLessThanOrEqual(PARSED_CACHE_CHARS);
    expect(sandbox.cacheSize.entries).toBeLessThan(20);
  });

  it("holds its thread's share, and a source parsed by both engines once", async () => {
    const sandbox = new LiquidSandbox(2_000_000);
    const big = (i: number) => `{{ ${i} }}` + 'x'.repeat(900_000);
    for (let i = 0; i < 5; i++) await sandbox.render({ subject: 's', body: big(i) }, {});
    // The last two bodies and the subject fit; the three before were dropped, oldest first.
    expect(sandbox.cacheSize).toEqual({ chars: 2 * big(0).length + 1, entries: 3 });
    await sandbox.renderText(big(4), {});
    expect(sandbox.cacheSize).toEqual({ chars: 2 * big(0).length + 1, entries: 3 });
  });
});

describe('TemplateRenderer in a worker process (background)', () => {
  it('starts threads as renders wait, not all up front', async () => {
    const background = new TemplateRenderer({ timeoutMs: 5000, threads: 2, background: true });
    try {
      await background.render({ subject: 'Hi', body: '<b>{{ n }}</b>' }, { n: 1 });
      const pool = (background as unknown as { pool: { threads: unknown[] } }).pool;
      expect(pool.threads).toHaveLength(1);
    } finally {
      await background.onApplicationShutdown();
    }
  });
});
