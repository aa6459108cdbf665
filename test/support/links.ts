import { parseDocument } from 'htmlparser2';

/** The links of an email's HTML: every `<a href>` and `<img src>`, in document order. */
export interface Links {
  hrefs: string[];
  images: string[];
}

export function linksOf(html: string): Links {
  const out: Links = { hrefs: [], images: [] };
  const walk = (nodes: unknown[]) => {
    for (const node of nodes as Array<{
      name?: string;
      attribs?: Record<string, string>;
      children?: unknown[];
    }>) {
      if (node.name === 'a' && node.attribs?.href !== undefined) out.hrefs.push(node.attribs.href);
      if (node.name === 'img' && node.attribs?.src) out.images.push(node.attribs.src);
      if (node.children) walk(node.children);
    }
  };
  walk(parseDocument(html).children);
  return out;
}
