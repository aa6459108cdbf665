import { workerData } from 'node:worker_threads';
import {
  LiquidSandbox,
  RenderContext,
  RenderedContent,
  RenderSource,
  TemplateRenderError,
} from './liquid-sandbox';

/**
 * Renders of one source for several recipients, handed to a pool thread as one task: the source
 * crosses threads once and the per-task cost (message passing, scheduling) is paid once per batch.
 * `progress` is shared memory the thread writes where it is to, so each render keeps its own
 * deadline.
 */
export type RenderTask =
  | {
      kind: 'message';
      source: RenderSource;
      contexts: RenderContext[];
      progress: SharedArrayBuffer;
    }
  | { kind: 'text'; source: string; contexts: RenderContext[]; progress: SharedArrayBuffer }
  /** Parses only (the save-time and request checks of long sources): one context, unused. */
  | { kind: 'parse'; source: string; contexts: RenderContext[]; progress: SharedArrayBuffer };

/**
 * Errors do not keep their class across threads, so a template's failure comes back as a value.
 * `ms`: the render's time on the thread (what a project's budget is charged).
 */
export type RenderOutcome = { ms?: number } & (
  | { ok: true; message?: RenderedContent; text?: string; parseError?: string | null }
  | { ok: false; part: 'subject' | 'body'; message: string }
  /** Anything else one render threw: it fails that recipient, not the batch. */
  | { ok: false; part?: undefined; message: string }
);

export const PART_CODES = { subject: 0, body: 1 } as const;
/**
 * `progress`: Int32 at PART_OFFSET (the part, PART_CODES), Int32 at INDEX_OFFSET (the context being
 * rendered), and at STARTED_AT_OFFSET the ms time the thread began that context.
 */
export const PART_OFFSET = 0;
export const INDEX_OFFSET = 4;
export const STARTED_AT_OFFSET = 8;
export const PROGRESS_BYTES = 16;

/** What the pool tells each thread (piscina's workerData). */
export interface RenderThreadData {
  /** This thread's share of the process's parsed-template cache, in characters of source. */
  parsedCacheChars?: number;
}

/** Made on a thread's first task: the main thread imports this module for its constants only. */
let sandbox: LiquidSandbox | undefined;

/** Renders a task's contexts in order (render-thread.ts, the pool's entry point, calls it). */
export default async function render(task: RenderTask): Promise<RenderOutcome[]> {
  sandbox ??= new LiquidSandbox((workerData as RenderThreadData | null)?.parsedCacheChars);
  const ints = new Int32Array(task.progress, 0, 2);
  const startedAt = new BigInt64Array(task.progress, STARTED_AT_OFFSET, 1);
  const outcomes: RenderOutcome[] = [];
  for (let i = 0; i < task.contexts.length; i++) {
    Atomics.store(ints, INDEX_OFFSET / 4, i);
    Atomics.store(ints, PART_OFFSET, PART_CODES.subject);
    Atomics.store(startedAt, 0, BigInt(Date.now()));
    const began = performance.now();
    const outcome = await renderOne(task, task.contexts[i], ints);
    outcomes.push({ ...outcome, ms: performance.now() - began });
  }
  return outcomes;
}

async function renderOne(
  task: RenderTask,
  context: RenderContext,
  ints: Int32Array,
): Promise<RenderOutcome> {
  const s = sandbox as LiquidSandbox;
  try {
    if (task.kind === 'parse') return { ok: true, parseError: s.validate(task.source) };
    if (task.kind === 'text') {
      Atomics.store(ints, PART_OFFSET, PART_CODES.body);
      return { ok: true, text: await s.renderText(task.source, context) };
    }
    const message = await s.render(task.source, context, (part) =>
      Atomics.store(ints, PART_OFFSET, PART_CODES[part]),
    );
    return { ok: true, message };
  } catch (error) {
    if (error instanceof TemplateRenderError)
      return { ok: false, part: error.part, message: error.message };
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
}
