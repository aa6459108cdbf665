import { Parser } from 'htmlparser2';

export interface TrackingLinks {
  /** The pixel's URL, or null when opens are not tracked. */
  pixelUrl: string | null;
  /** The tracked URL of a link, or null to leave it (clicks not tracked, unsigned, too long). */
  clickUrl: ((url: string) => string | null) | null;
  /** Links starting with one of these stay as they are (the unsubscribe link, links already tracked). */
  keep: readonly string[];
}

interface Edit {
  start: number;
  end: number;
  text: string;
}

/**
 * The HTML as delivered with tracking: every `http(s)` link of an `<a>` or
 * `<area>` rewritten through `clickUrl`, and a 1×1 pixel before `</body>`
 * (or at the end). Parsed with htmlparser2 (the parser html-to-text already
 * uses), and only the `href` tags it rewrites are re-serialised: the rest of
 * the markup is passed through byte for byte. `mailto:`, `tel:`, `#`
 * anchors, relative links and `keep` prefixes are not touched.
 */
export function addTracking(html: string, links: TrackingLinks): string {
  const edits: Edit[] = [];
  let bodyClose = -1;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (!links.clickUrl || (name !== 'a' && name !== 'area') || attribs.href === undefined)
          return;
        const href = attribs.href.trim();
        if (!/^https?:\/\//i.test(href) || links.keep.some((prefix) => href.startsWith(prefix)))
          return;
        const tracked = links.clickUrl(href);
        if (tracked === null) return;
        const start = parser.startIndex;
        const end = parser.endIndex + 1;
        const selfClosing = html.slice(start, end).endsWith('/>');
        const attrs = Object.entries({ ...attribs, href: tracked })
          .map(([key, value]) => ` ${key}="${escapeAttribute(value)}"`)
          .join('');
        edits.push({ start, end, text: `<${name}${attrs}${selfClosing ? ' />' : '>'}` });
      },
      onclosetag(name, isImplied) {
        if (name === 'body' && !isImplied) bodyClose = parser.startIndex;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html);

  if (links.pixelUrl) {
    const pixel = `<img src="${escapeAttribute(links.pixelUrl)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`;
    const at = bodyClose >= 0 ? bodyClose : html.length;
    edits.push({ start: at, end: at, text: pixel });
  }
  edits.sort((a, b) => a.start - b.start);
  let out = '';
  let from = 0;
  for (const edit of edits) {
    out += html.slice(from, edit.start) + edit.text;
    from = edit.end;
  }
  return out + html.slice(from);
}

function escapeAttribute(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/"/g, '&quot;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}
