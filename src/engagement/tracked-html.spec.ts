import { parseDocument } from 'htmlparser2';
import { addTracking } from './tracked-html';

const links = {
  pixelUrl: 'https://mail.example/t/o/OPEN',
  clickUrl: (url: string) => `https://mail.example/t/c/${encodeURIComponent(url)}`,
  keep: ['https://mail.example/unsubscribe/', 'https://mail.example/t/'],
};

function hrefs(html: string): string[] {
  const out: string[] = [];
  const walk = (nodes: unknown[]) => {
    for (const node of nodes as Array<{
      name?: string;
      attribs?: Record<string, string>;
      children?: unknown[];
    }>) {
      if ((node.name === 'a' || node.name === 'area') && node.attribs?.href !== undefined)
        out.push(node.attribs.href);
      if (node.children) walk(node.children);
    }
  };
  walk(parseDocument(html).children);
  return out;
}

describe('addTracking', () => {
  it('rewrites http(s) links (entities decoded before signing) and nothing else', () => {
    const html =
      '<html><body><p>Hi <a class="b" href="https://ex.com/a?x=1&amp;y=2">A</a> <A HREF=\' HTTP://ex.org/p \'>P</A> ' +
      '<a href="mailto:a@b.c">m</a> <a href="tel:+1">t</a> <a href="#top">#</a> <a href="/relative">r</a> ' +
      '<a href="https://mail.example/unsubscribe/TOKEN">unsubscribe</a> <a name="x">no href</a>' +
      '<map><area href="https://ex.com/map"></map></p></body></html>';
    const out = addTracking(html, links);
    expect(hrefs(out)).toEqual([
      links.clickUrl('https://ex.com/a?x=1&y=2'),
      links.clickUrl('HTTP://ex.org/p'),
      'mailto:a@b.c',
      'tel:+1',
      '#top',
      '/relative',
      'https://mail.example/unsubscribe/TOKEN',
      links.clickUrl('https://ex.com/map'),
    ]);
    expect(out).toContain('class="b"');
    expect(out).toContain('<a href="mailto:a@b.c">m</a>'); // untouched bytes
    expect(out).toMatch(
      /<img src="https:\/\/mail\.example\/t\/o\/OPEN" width="1" height="1"[^>]*><\/body><\/html>$/,
    );
  });

  it('appends the pixel without a body, and tracks only what is asked', () => {
    expect(addTracking('<p>x</p>', { ...links, clickUrl: null })).toBe(
      '<p>x</p><img src="https://mail.example/t/o/OPEN" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">',
    );
    const html = '<p><a href="https://ex.com/">x</a></p>';
    expect(addTracking(html, { ...links, pixelUrl: null })).toBe(
      `<p><a href="${links.clickUrl('https://ex.com/').replace(/&/g, '&amp;')}">x</a></p>`,
    );
    expect(addTracking(html, { ...links, pixelUrl: null, clickUrl: () => null })).toBe(html);
  });

  it('leaves links already tracked alone and escapes attribute values', () => {
    const out = addTracking(
      '<a href="https://mail.example/t/c/abc">x</a><a title="a&quot;b" href="https://e.x/?q=&quot;">y</a>',
      {
        ...links,
        pixelUrl: null,
      },
    );
    expect(hrefs(out)).toEqual([
      'https://mail.example/t/c/abc',
      links.clickUrl('https://e.x/?q="'),
    ]);
    expect(out).toContain('title="a&quot;b"');
  });
});
