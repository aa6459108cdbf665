import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { OnApplicationShutdown } from '@nestjs/common';
import { Piscina } from 'piscina';
import { FairSemaphore } from '../common/concurrency/fair-semaphore';
import { isPersistenceWrapper } from '../contacts/contact-data';
import { apiRequestProject, isApiRequest } from '../database/statement-timeout';
import {
  LiquidSandbox,
  PARSED_CACHE_CHARS,
  RenderContext,
  RenderedContent,
  RenderLimitError,
  RenderPart,
  RenderSource,
  TemplateRenderError,
} from './liquid-sandbox';
import { INDEX_OFFSET, PART_OFFSET, PROGRESS_BYTES, STARTED_AT_OFFSET } from './render-worker';
import type { RenderOutcome, RenderTask, RenderThreadData } from './render-worker';
import { registerParseOffload } from './parse-offload';

export { htmlToText, RENDER_LIMITS, RenderLimitError, TemplateRenderError } from './liquid-sandbox';
export type { BodyFormat, RenderContext, RenderedContent, RenderSource } from './liquid-sandbox';

export interface RenderContextInput {
  email: string;
  contact: { id: string; email: string; subscribed: boolean; data: Record<string, unknown> };
  /** The send's own variables; they win over the contact's data keys. */
  data?: Record<string, unknown> | null;
  unsubscribeUrl: string;
}

export interface RenderPoolOptions {
  /** Wall-clock budget of one render (RENDER_TIMEOUT_MS), counted from the moment a thread takes it. */
  timeoutMs: number;
  /** Threads rendering at once in this process; one project renders on at most all but one of them. */
  threads?: number;
  /** Old-generation heap of each thread: a render that needs more fails instead of growing the process. */
  threadHeapMb?: number;
  /**
   * Young generation of each thread (two semi-spaces): V8 sizes it from the machine otherwise, and
   * a thread rendering 1 MB bodies lets it fill before collecting (bench:noisy-neighbour, memory part).
   */
  threadYoungMb?: number;
  /** Characters of source the threads' parsed-template caches hold together (each thread its share). */
  parsedCacheChars?: number;
  /**
   * No request waits on this process's renders (APP_ROLE=worker): its threads start when renders
   * are waiting and stop after a minute idle, and there is no spare thread. A delivery worker
   * renders one message at a time mostly, and each idle thread (liquidjs, html-to-text,
   * markdown-it loaded, its heap) holds about 12 MB of the process's memory.
   */
  background?: boolean;
  /** Where API requests' slow renders are charged to their project (ExpensiveWork); none: free. */
  budget?: RenderBudget;
}

/** A project's budget of expensive work, shared with segment evaluation (ExpensiveWork). */
export interface RenderBudget {
  /** Rejects (429 RATE_LIMIT_EXCEEDED with Retry-After) while the project's budget is spent. */
  assertBudget(projectId: string): Promise<void>;
  /** Charges `ms` of work to the project. */
  spend(projectId: string, ms: number): Promise<void>;
  /** Runs `work` in the project's one turn of expensive work (its segment evaluations' slot). */
  inTurn<T>(projectId: string, work: () => Promise<T>): Promise<T>;
}

/**
 * Thread time of one render that is not charged to the budget: an ordinary message renders well
 * within it, so a project sending many ordinary messages spends nothing, while a render that
 * runs to the deadline is charged nearly all of it.
 */
export const FREE_RENDER_MS = 25;

/**
 * A source this long is charged all its render time, with no free share: Gmail clips a message
 * over 102 kB, so ordinary mail stays below it, while a tenant sending bodies of several hundred
 * kilobytes in a loop (each render a few milliseconds, under FREE_RENDER_MS) would otherwise keep
 * a thread and a core busy for free.
 */
export const LARGE_SOURCE_CHARS = 102_400;

function sourceChars(source: RenderSource | string): number {
  return typeof source === 'string' ? source.length : source.subject.length + source.body.length;
}

/**
 * A render on a thread this long marks its project as rendering slowly: far above an ordinary
 * message's render, even on a loaded machine, and far below the deadline such renders run to.
 */
const SLOW_RENDER_MS = 200;
/**
 * How long a project marked so has its metered renders run in its turn of expensive work: the
 * budget's refill period, after which its slow work has been repaid.
 */
const SLOW_TENANT_MS = 60_000;
/** Projects remembered as slow at most; past it the oldest mark goes first. */
const MAX_SLOW_TENANTS = 10_000;

export const DEFAULT_RENDER_TIMEOUT_MS = 2000;
/** A thread's old generation: room for a render at RENDER_LIMITS (16 MB of allocations, 2 MB of output, its HTML-to-text). */
export const DEFAULT_THREAD_HEAP_MB = 128;
/** A thread's young generation: 8 MB (semi-spaces of 4 MB) keeps a render's garbage collected early. */
export const DEFAULT_THREAD_YOUNG_MB = 8;
const START_POLL_MS = 20;
/**
 * Sources up to this long are parsed where they are checked: a few kilobytes parse in well under
 * a millisecond, less than the hand-over to a thread. Longer ones (bodies of up to 1 MB: 6 ms for
 * 720 kB, and a tenant can send them in a loop) are parsed on a render thread.
 */
export const INLINE_PARSE_CHARS = 16_384;
/** Renders of one source per pool task: enough to amortise the hand-over, few enough to share threads. */
const MAX_BATCH = 32;

type Rendered = RenderOutcome & { ok: true };

interface Batch {
  tenant: string;
  /** Asked for by an API request: charged to the project's budget and refused when it is spent. */
  metered: boolean;
  kind: RenderTask['kind'];
  source: RenderSource | string;
  items: {
    context: RenderContext;
    resolve: (outcome: Rendered) => void;
    reject: (error: unknown) => void;
  }[];
}

function sameSource(a: RenderSource | string, b: RenderSource | string): boolean {
  if (a === b) return true;
  if (typeof a === 'string' || typeof b === 'string') return false;
  return a.subject === b.subject && a.body === b.body && a.format === b.format;
}

/**
 * The compiled worker: under ts-jest this file runs from src/, but threads load JavaScript, so
 * they take the build's copy (npm test builds first).
 */
const WORKER_FILE = __filename.endsWith('.ts')
  ? resolve(__dirname, '../../dist/templates/render-thread.js')
  : resolve(__dirname, 'render-thread.js');

/**
 * Rendering off the event loop: every message and WEBHOOK text is rendered by a pool of worker
 * threads (piscina), each render with a hard wall-clock deadline and a heap cap. A render past its
 * deadline stops its thread (piscina terminates a thread whose task is aborted) and fails with a
 * TemplateRenderError naming the part it was in; nothing a template does can hold the API or a
 * worker's event loop. At most `threads` renders are handed to the pool at once and the rest wait
 * here, so a deadline counts rendering time, not time spent queued behind others.
 *
 * Renders asked for by an API request (preview, save-time check, test send, POST /v1/send) are
 * charged to their project's budget of expensive work, their thread time beyond FREE_RENDER_MS
 * each (all of it for a source over LARGE_SOURCE_CHARS): a project whose budget is spent is refused (429) before its next render, so one tenant's
 * slow templates cannot keep a render thread and a core busy for long. Delivery and workflow
 * renders (background work, already queued) are never refused.
 */
export class TemplateRenderer implements OnApplicationShutdown {
  /** Parses only (save-time checks), on the calling thread: parsing is linear and bounded by parseLimit. */
  private readonly parser = new LiquidSandbox();
  private pool: Piscina | null = null;
  private readonly slots: FairSemaphore;
  private readonly threads: number;
  private readonly perTenant: number;
  /** Renders asked for in this turn of the event loop, grouped by tenant and source. */
  private gathering: Batch[] = [];
  /** Projects whose metered renders were slow lately, and until when they are treated so. */
  private readonly slowTenants = new Map<string, number>();
  private readonly unregisterParse: () => void;

  constructor(
    private readonly options: RenderPoolOptions = { timeoutMs: DEFAULT_RENDER_TIMEOUT_MS },
  ) {
    this.threads = options.threads ?? Math.max(2, Math.min(4, availableParallelism()));
    // A project whose templates are slow (or hostile) holds all threads but one: the last one
    // stays for the other projects, whose renders then wait behind each other only.
    this.perTenant = Math.max(1, this.threads - 1);
    this.slots = new FairSemaphore(this.threads, this.perTenant);
    this.unregisterParse = registerParseOffload((source) =>
      this.parseError(source, apiRequestProject() ?? ''),
    );
  }

  /** The parse error of a Liquid source, or null when it parses. */
  validate(source: string): string | null {
    return this.parser.validate(source);
  }

  /**
   * validate() off the event loop for a long source: on a render thread, in `tenant`'s share of
   * the threads and under the render deadline (never charged: parsing is linear).
   */
  async parseError(source: string, tenant = ''): Promise<string | null> {
    if (source.length <= INLINE_PARSE_CHARS) return this.parser.validate(source);
    try {
      return (await this.enqueue(tenant, false, 'parse', source, {})).parseError ?? null;
    } catch (error) {
      if (error instanceof RenderLimitError) return error.message;
      throw error;
    }
  }

  /** `tenant` (the project) decides the render's share of the threads. */
  async render(
    source: RenderSource,
    context: RenderContext,
    tenant = '',
  ): Promise<RenderedContent> {
    return (await this.enqueue(tenant, isApiRequest(), 'message', source, context))
      .message as RenderedContent;
  }

  /** Plain text (no HTML escaping): workflow WEBHOOK bodies and header values. */
  async renderText(source: string, context: RenderContext, tenant = ''): Promise<string> {
    return (await this.enqueue(tenant, isApiRequest(), 'text', source, context)).text as string;
  }

  async onApplicationShutdown(): Promise<void> {
    this.unregisterParse();
    const pool = this.pool;
    this.pool = null;
    if (pool) await pool.destroy();
  }

  /**
   * Renders asked for in the same turn of the event loop with the same source and tenant (a
   * workflow batch's SEND_EMAIL steps, a campaign's chunk) go to the threads together, a few
   * tasks of up to MAX_BATCH renders each.
   */
  private enqueue(
    tenant: string,
    metered: boolean,
    kind: RenderTask['kind'],
    source: RenderSource | string,
    context: RenderContext,
  ): Promise<Rendered> {
    return new Promise<Rendered>((resolve, reject) => {
      let group = this.gathering.find(
        (g) =>
          g.tenant === tenant &&
          g.metered === metered &&
          g.kind === kind &&
          sameSource(g.source, source),
      );
      if (!group) {
        group = { tenant, metered, kind, source, items: [] };
        this.gathering.push(group);
      }
      group.items.push({ context, resolve, reject });
      if (this.gathering.length === 1 && group.items.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const groups = this.gathering;
    this.gathering = [];
    for (const group of groups) {
      // Spread over the threads one tenant may use, at most MAX_BATCH renders a task.
      const size = Math.min(MAX_BATCH, Math.ceil(group.items.length / this.perTenant));
      for (let at = 0; at < group.items.length; at += size) {
        const batch = { ...group, items: group.items.slice(at, at + size) };
        // Settles every render of the batch should the pool itself fail (a missing worker file).
        this.runBatch(batch).catch((error: unknown) => {
          for (const item of batch.items) item.reject(error);
        });
      }
    }
  }

  /**
   * One batch in the tenant's turn; a metered one is checked against and charged to its budget.
   * A project whose metered renders were slow lately renders in its turn of expensive work as
   * well (which checks the budget in that turn), so its slow renders and segment evaluations take
   * one core between them, not one each.
   */
  private async runBatch(group: Batch): Promise<void> {
    const budget = group.metered && group.tenant ? this.options.budget : undefined;
    const inTurn = budget !== undefined && this.isSlow(group.tenant);
    if (budget && !inTurn) await budget.assertBudget(group.tenant);
    const render = async (): Promise<() => void> => {
      const { renderMs, settle } = await this.slots.run(group.tenant, () =>
        this.runInThread(group),
      );
      // Charged before the callers hear back (and before the turn passes on), so the next
      // request or evaluation already sees the charge.
      const free = sourceChars(group.source) > LARGE_SOURCE_CHARS ? 0 : FREE_RENDER_MS;
      const over = Math.ceil(renderMs.reduce((sum, ms) => sum + Math.max(0, ms - free), 0));
      if (budget && renderMs.some((ms) => ms >= SLOW_RENDER_MS)) this.markSlow(group.tenant);
      if (budget && over > 0) await budget.spend(group.tenant, over);
      return settle;
    };
    const settle = inTurn ? await budget.inTurn(group.tenant, render) : await render();
    settle();
  }

  private isSlow(tenant: string): boolean {
    const until = this.slowTenants.get(tenant);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.slowTenants.delete(tenant);
    return false;
  }

  private markSlow(tenant: string): void {
    this.slowTenants.delete(tenant);
    // A Map iterates in insertion order, and a mark is re-inserted when renewed: the first is the oldest.
    while (this.slowTenants.size >= MAX_SLOW_TENANTS)
      this.slowTenants.delete(this.slowTenants.keys().next().value as string);
    this.slowTenants.set(tenant, Date.now() + SLOW_TENANT_MS);
  }

  /**
   * Runs a batch on a thread: the time each render took there (not the wait for a thread, nor a
   * thread's start) and how to settle the renders (one stopped by the deadline fails, the others
   * of its batch are queued again).
   */
  private async runInThread(group: Batch): Promise<{ renderMs: number[]; settle: () => void }> {
    const { tenant, metered, kind, source, items } = group;
    const progress = new SharedArrayBuffer(PROGRESS_BYTES);
    const ints = new Int32Array(progress, 0, 2);
    const startedAt = new BigInt64Array(progress, STARTED_AT_OFFSET, 1);
    const abort = new AbortController();
    let culprit = -1;
    // Each render's budget counts from when the thread begins it (it writes the time): starting
    // a thread to replace a stopped one can take a second on a loaded machine, and is not the
    // template's doing.
    let timer: NodeJS.Timeout;
    const check = (): void => {
      const index = Atomics.load(ints, INDEX_OFFSET / 4);
      const started = Number(Atomics.load(startedAt, 0));
      if (started === 0 || index !== Atomics.load(ints, INDEX_OFFSET / 4)) {
        timer = setTimeout(check, START_POLL_MS);
        return;
      }
      const left = started + this.options.timeoutMs - Date.now();
      if (left > 0) {
        timer = setTimeout(check, left);
        return;
      }
      culprit = index;
      abort.abort();
    };
    timer = setTimeout(check, START_POLL_MS);
    const task = {
      kind,
      source,
      contexts: items.map((item) => item.context),
      progress,
    } as RenderTask;
    let outcomes: RenderOutcome[];
    try {
      outcomes = (await this.threadPool().run(task, { signal: abort.signal })) as RenderOutcome[];
    } catch (error) {
      const out = (error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
      if (!abort.signal.aborted && !out) {
        return { renderMs: [], settle: () => items.forEach((item) => item.reject(error)) };
      }
      // A render stopped by the deadline is charged the deadline (stopping the thread is not its
      // time); one out of memory, the time it ran. The others are charged when rendered again.
      const started = Number(Atomics.load(startedAt, 0));
      const renderMs = abort.signal.aborted
        ? [this.options.timeoutMs]
        : started > 0
          ? [Date.now() - started]
          : [];
      // The thread stopped inside one render: that one fails, the others (whose results
      // stopped with the thread) are rendered again.
      const index = abort.signal.aborted ? culprit : Atomics.load(ints, INDEX_OFFSET / 4);
      const part: RenderPart = Atomics.load(ints, PART_OFFSET) === 0 ? 'subject' : 'body';
      const settle = (): void => {
        items[index].reject(
          new RenderLimitError(
            part,
            out
              ? 'rendering needed more memory than a message may use'
              : `rendering took longer than ${this.options.timeoutMs} ms`,
          ),
        );
        for (const [i, item] of items.entries()) {
          if (i !== index)
            this.enqueue(tenant, metered, kind, source, item.context).then(
              item.resolve,
              item.reject,
            );
        }
      };
      return { renderMs, settle };
    } finally {
      clearTimeout(timer);
    }
    const settle = (): void => {
      for (const [i, outcome] of outcomes.entries()) {
        if (outcome.ok) items[i].resolve(outcome);
        else if (outcome.part)
          items[i].reject(new TemplateRenderError(outcome.part, outcome.message));
        else items[i].reject(new Error(outcome.message));
      }
    };
    return { renderMs: outcomes.map((outcome) => outcome.ms ?? 0), settle };
  }

  private threadPool(): Piscina {
    // Without it piscina's threads fail to start and every render waits forever (specs hung).
    if (!this.pool && !existsSync(WORKER_FILE))
      throw new Error(`${WORKER_FILE} is missing: run npm run build (npm test does)`);
    const threads = this.options.background ? this.threads : this.threads + 1;
    const workerData: RenderThreadData = {
      parsedCacheChars: Math.floor((this.options.parsedCacheChars ?? PARSED_CACHE_CHARS) / threads),
    };
    this.pool ??= new Piscina({
      filename: WORKER_FILE,
      workerData,
      // One thread more than renders run at once (the semaphore), all kept up: while a thread
      // stopped at a deadline is replaced (a start takes a few hundred ms on a busy machine), the
      // spare takes the next render, which otherwise waited for the start (bench:noisy-neighbour).
      // A background pool (options.background) has no spare and starts threads as renders wait.
      minThreads: this.options.background ? 1 : threads,
      maxThreads: threads,
      // Threads stay: starting one costs tens of milliseconds (liquidjs, html-to-text, markdown-it).
      idleTimeout: 60_000,
      resourceLimits: {
        maxOldGenerationSizeMb: this.options.threadHeapMb ?? DEFAULT_THREAD_HEAP_MB,
        maxYoungGenerationSizeMb: this.options.threadYoungMb ?? DEFAULT_THREAD_YOUNG_MB,
      },
    });
    return this.pool;
  }
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
