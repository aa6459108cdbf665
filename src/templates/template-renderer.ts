import { compile } from 'html-to-text';
import { Liquid, Template } from 'liquidjs';
import MarkdownIt from 'markdown-it';
import { isPersistenceWrapper } from '../contacts/contact-data';

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

export interface RenderContextInput {
  email: string;
  contact: { id: string; email: string; subscribed: boolean; data: Record<string, unknown> };
  /** The send's own variables; they win over the contact's data keys. */
  data?: Record<string, unknown> | null;
  unsubscribeUrl: string;
}

/** Raised for Liquid that does not parse or exceeds a limit while rendering. */
export class TemplateRenderError extends Error {
  constructor(
    public readonly part: 'subject' | 'body',
    message: string,
  ) {
    super(message);
    this.name = 'TemplateRenderError';
  }
}

/** Limits of the sandbox. Parse and render budgets are per template part. */
export const RENDER_LIMITS = {
  /** Characters of template source accepted by the parser. */
  parseChars: 1_000_000,
  /** Wall-clock budget of one render, in ms (liquidjs checks it while rendering). */
  renderMs: 250,
  /** Allocation budget for loops, ranges and string filters, in liquidjs units (bytes/items). */
  memory: 16_000_000,
  /** Rendered output beyond this is refused rather than mailed. */
  outputChars: 2_000_000,
} as const;

const PARSED_CACHE_SIZE = 500;

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
    renderLimit: RENDER_LIMITS.renderMs,
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

/**
 * Liquid rendering in a sandbox: no file access, only own properties of the
 * context, bounded time, memory and output. HTML bodies escape variables by
 * default (`{{ x | raw }}` opts out) because the values usually come from
 * contact data that the sender does not control; subjects are plain text.
 */
export class TemplateRenderer {
  private readonly htmlEngine = engine(true);
  private readonly textEngine = engine(false);
  private readonly markdown = new MarkdownIt({ html: true, linkify: true });
  private readonly parsed = new Map<string, Template[]>();

  /** The parse error of a Liquid source, or null when it parses. */
  validate(source: string): string | null {
    try {
      this.textEngine.parse(source);
      return null;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  async render(source: RenderSource, context: RenderContext): Promise<RenderedContent> {
    const subject = (await this.renderPart('subject', this.textEngine, source.subject, context))
      .replace(/[\r\n]+/g, ' ')
      .trim();
    let html = await this.renderPart('body', this.htmlEngine, source.body, context);
    if (source.format === 'markdown') html = this.markdown.render(html);
    return { subject, html, text: htmlToText(html) };
  }

  /** Plain text (no HTML escaping): workflow WEBHOOK bodies and header values. */
  renderText(source: string, context: RenderContext): Promise<string> {
    return this.renderPart('body', this.textEngine, source, context);
  }

  private async renderPart(
    part: 'subject' | 'body',
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
      throw new TemplateRenderError(part, error instanceof Error ? error.message : String(error));
    }
  }

  /** Parsed templates are reused: a campaign renders one source thousands of times. */
  private parse(liquid: Liquid, source: string, html: boolean): Template[] {
    const key = `${html ? 'h' : 't'}:${source}`;
    const hit = this.parsed.get(key);
    if (hit) {
      this.parsed.delete(key);
      this.parsed.set(key, hit);
      return hit;
    }
    const templates = liquid.parse(source);
    this.parsed.set(key, templates);
    if (this.parsed.size > PARSED_CACHE_SIZE) {
      this.parsed.delete(this.parsed.keys().next().value as string);
    }
    return templates;
  }
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

/** The plain-text alternative of an HTML body. */
export function htmlToText(html: string): string {
  return convertHtml(html);
}

/**
 * Track-style values `{value, persistent}` render as their value; the
 * wrapper is an instruction about storage, not part of the data.
 */
export function unwrapDataValues(
  data: Record<string, unknown> | null | undefined,
): Record<string, unknown> {
  // fromEntries defines own properties, so keys such as "__proto__" stay plain keys.
  return Object.fromEntries(
    Object.entries(data ?? {}).map(([key, value]) => [
      key,
      isPersistenceWrapper(value) ? value.value : value,
    ]),
  );
}

/**
 * Contract order: the contact's data keys at top level, the send's data over
 * them, then the reserved names `email`, `contact` and `unsubscribeUrl`.
 */
export function buildRenderContext(input: RenderContextInput): RenderContext {
  return {
    ...unwrapDataValues(input.contact.data),
    ...unwrapDataValues(input.data),
    email: input.email,
    contact: {
      id: input.contact.id,
      email: input.contact.email,
      subscribed: input.contact.subscribed,
      data: unwrapDataValues(input.contact.data),
    },
    unsubscribeUrl: input.unsubscribeUrl,
  };
}
