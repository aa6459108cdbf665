import { compile } from 'html-to-text';
import { Liquid, Template } from 'liquidjs';
import MarkdownIt from 'markdown-it';
import { errorMessage } from '../common/errors/error-message';

/**
 * The rendering itself: Liquid, Markdown and HTML-to-text, with no I/O. It runs inside the render
 * pool's worker threads (render-worker.ts), where a wall-clock deadline can stop it; the main
 * thread uses it only to parse (validate) sources.
 */

/** Body formats a message can be written in; markdown is turned into HTML after Liquid. */
export type BodyFormat = 'html' | 'markdown';

export interface RenderSource {
  subject: string;
  body: string;
  format?: BodyFormat;
}

export interface RenderedContent {
  subject: string;
  html: string;
  text: string;
}

/** Per-recipient values; see buildRenderContext for the precedence rules. */
export type RenderContext = Record<string, unknown>;

export type RenderPart = 'subject' | 'body';

/** Raised for Liquid that does not parse or exceeds a limit while rendering. */
export class TemplateRenderError extends Error {
  constructor(
    public readonly part: RenderPart,
    message: string,
  ) {
    super(message);
    this.name = 'TemplateRenderError';
  }
}

/** A render stopped by the pool's deadline or heap cap, not by what the template says. */
export class RenderLimitError extends TemplateRenderError {
  constructor(part: RenderPart, message: string) {
    super(part, message);
    this.name = 'RenderLimitError';
  }
}

/** Limits of the sandbox. Parse and render budgets are per template part. */
export const RENDER_LIMITS = {
  /** Characters of template source accepted by the parser. */
  parseChars: 1_000_000,
  /** Allocation budget for loops, ranges and string filters, in liquidjs units (bytes/items). */
  memory: 16_000_000,
  /** Rendered output beyond this is refused rather than mailed. */
  outputChars: 2_000_000,
  /** Elements open inside each other in an HTML body; deeper is refused before converting. */
  htmlDepth: 1_000,
} as const;

/**
 * Characters of source the parsed-template caches of one process hold together, shared out among
 * its render threads (TemplateRenderer gives each thread total / threads). A parsed tree keeps its
 * source (liquidjs tokens point into it) plus small nodes: about 8 to 16 MB in all, two or three
 * 1 MB campaign bodies or hundreds of ordinary ones per thread.
 */
export const PARSED_CACHE_CHARS = 8_000_000;

/** liquidjs tags that load another template by name; a message has no other files to load. */
const FILE_TAGS = ['include', 'render', 'layout'] as const;

function engine(escape: boolean): Liquid {
  const liquid = new Liquid({
    // An empty in-memory file system: nothing can reach the disk even if a tag slipped through.
    templates: {},
    ownPropertyOnly: true,
    strictFilters: true,
    outputEscape: escape ? 'escape' : undefined,
    parseLimit: RENDER_LIMITS.parseChars,
    memoryLimit: RENDER_LIMITS.memory,
    timezoneOffset: 0,
  });
  // Refused when parsed, so the save-time check rejects them instead of every send failing on a lookup.
  for (const name of FILE_TAGS) {
    liquid.registerTag(name, {
      parse() {
        throw new Error(
          `the {% ${name} %} tag is not supported: a template cannot load other files`,
        );
      },
      render() {
        return '';
      },
    });
  }
  return liquid;
}

/** Compiled once: html-to-text's `convert` rebuilds its selector tables on every call. */
const convertHtml = compile({
  wordwrap: 78,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    // Headings keep their case: shouting every title reads badly in a mail client.
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((h) => ({
      selector: h,
      options: { uppercase: false },
    })),
  ],
});

/** Elements that hold no content, so never stay open. */
const VOID_ELEMENTS = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);

/** For an element, the open elements an HTML parser closes when it opens right inside them. */
const IMPLIED_CLOSE: Record<string, readonly string[]> = {
  p: ['p'],
  li: ['li'],
  dt: ['dt', 'dd'],
  dd: ['dt', 'dd'],
  option: ['option'],
  tr: ['tr', 'td', 'th'],
  td: ['td', 'th'],
  th: ['td', 'th'],
};

/** How far down the open elements a closing tag looks for its element (a stray one is ignored). */
const CLOSE_SEARCH = 16;

const TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*>/g;

/**
 * Refuses HTML nested deeper than `max` elements, in one linear pass: the parser and converter
 * behind htmlToText take time that grows faster than the input with depth (a 720 kB body of
 * nested lists ran to the render deadline) and then overflow their stack anyway, so such a body
 * fails in milliseconds instead of holding a render thread. Unclosed paragraphs, list items and
 * cells close as a parser would close them, so ordinary sloppy HTML is not counted as deep.
 */
export function assertNestingDepth(html: string, max: number): void {
  const open: string[] = [];
  TAG.lastIndex = 0;
  for (let match = TAG.exec(html); match; match = TAG.exec(html)) {
    const name = match[2].toLowerCase();
    if (match[1]) {
      const stop = Math.max(0, open.length - CLOSE_SEARCH);
      for (let at = open.length - 1; at >= stop; at--) {
        if (open[at] !== name) continue;
        open.length = at;
        break;
      }
      continue;
    }
    if (VOID_ELEMENTS.has(name) || match[0].endsWith('/>')) continue;
    const closes = IMPLIED_CLOSE[name];
    while (closes && open.length > 0 && closes.includes(open[open.length - 1])) open.pop();
    open.push(name);
    if (open.length > max) throw new Error(`the HTML is nested deeper than ${max} elements`);
  }
}

/** The plain-text alternative of an HTML body. */
export function htmlToText(html: string): string {
  return convertHtml(html);
}

/**
 * Liquid in a sandbox: no file access, only own properties of the context, bounded memory and
 * output. HTML bodies escape variables by default (`{{ x | raw }}` opts out) because the values
 * usually come from contact data that the sender does not control; subjects are plain text.
 * Time is bounded by the caller (the pool's deadline), not here: liquidjs checks its own time
 * limit only between nodes, so one filter call could outlast it.
 */
export class LiquidSandbox {
  private readonly htmlEngine = engine(true);
  private readonly textEngine = engine(false);
  private readonly markdown = new MarkdownIt({ html: true, linkify: true });
  /**
   * Least recently used first; bounded by the characters of its sources, not its entry count.
   * Keyed by the source itself, which the parsed trees hold anyway (a key with a prefix was a
   * second copy of every source); one entry has the source's parse by either engine.
   */
  private readonly parsed = new Map<string, { html?: Template[]; text?: Template[] }>();
  private parsedChars = 0;

  /** `cacheChars`: characters of source this sandbox's parsed-template cache may hold. */
  constructor(private readonly cacheChars = PARSED_CACHE_CHARS) {}

  /** The parse error of a Liquid source, or null when it parses. */
  validate(source: string): string | null {
    try {
      this.textEngine.parse(source);
      return null;
    } catch (error) {
      return errorMessage(error);
    }
  }

  /** `onPart` is told which part starts, so a deadline can name the part it stopped. */
  async render(
    source: RenderSource,
    context: RenderContext,
    onPart: (part: RenderPart) => void = () => undefined,
  ): Promise<RenderedContent> {
    onPart('subject');
    const subject = (await this.renderPart('subject', this.textEngine, source.subject, context))
      .replace(/[\r\n]+/g, ' ')
      .trim();
    onPart('body');
    let html = await this.renderPart('body', this.htmlEngine, source.body, context);
    try {
      if (source.format === 'markdown') html = this.markdown.render(html);
      assertNestingDepth(html, RENDER_LIMITS.htmlDepth);
      return { subject, html, text: htmlToText(html) };
    } catch (error) {
      // Deep nesting overflows the converters' recursion: the template's problem, not a crash.
      throw new TemplateRenderError('body', errorMessage(error));
    }
  }

  /** Plain text (no HTML escaping): workflow WEBHOOK bodies and header values. */
  renderText(source: string, context: RenderContext): Promise<string> {
    return this.renderPart('body', this.textEngine, source, context);
  }

  private async renderPart(
    part: RenderPart,
    liquid: Liquid,
    source: string,
    context: RenderContext,
  ): Promise<string> {
    try {
      const output = await liquid.render(this.parse(liquid, source, part === 'body'), context);
      if (output.length > RENDER_LIMITS.outputChars) {
        throw new TemplateRenderError(
          part,
          `rendered ${part} exceeds ${RENDER_LIMITS.outputChars} characters`,
        );
      }
      return output;
    } catch (error) {
      if (error instanceof TemplateRenderError) throw error;
      throw new TemplateRenderError(part, errorMessage(error));
    }
  }

  /** Parsed templates are reused: a campaign renders one source thousands of times. */
  private parse(liquid: Liquid, source: string, html: boolean): Template[] {
    const engine = html ? 'html' : 'text';
    const entry = this.parsed.get(source);
    if (entry) {
      this.parsed.delete(source);
      this.parsed.set(source, entry);
    }
    const hit = entry?.[engine];
    if (hit) return hit;
    const templates = liquid.parse(source);
    if (source.length > this.cacheChars) return templates;
    if (entry) {
      entry[engine] = templates;
      return templates;
    }
    this.parsed.set(source, { [engine]: templates });
    this.parsedChars += source.length;
    for (const oldest of this.parsed.keys()) {
      if (this.parsedChars <= this.cacheChars) break;
      this.parsed.delete(oldest);
      this.parsedChars -= oldest.length;
    }
    return templates;
  }

  /** Characters and entries the parsed-template cache holds (for tests). */
  get cacheSize(): { chars: number; entries: number } {
    return { chars: this.parsedChars, entries: this.parsed.size };
  }
}
