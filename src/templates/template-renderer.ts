import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { OnApplicationShutdown } from '@nestjs/common';
import { Piscina } from 'piscina';
import { FairSemaphore } from '../common/concurrency/fair-semaphore';
import { isPersistenceWrapper } from '../contacts/contact-data';
import {
  LiquidSandbox,
  RenderContext,
  RenderedContent,
  RenderLimitError,
  RenderPart,
  RenderSource,
  TemplateRenderError,
} from './liquid-sandbox';
import { PROGRESS_BYTES, STARTED_AT_OFFSET } from './render-worker';
import type { RenderOutcome, RenderTask } from './render-worker';

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
  /** Heap of each thread: a render that needs more fails instead of growing the process. */
  threadHeapMb?: number;
}

export const DEFAULT_RENDER_TIMEOUT_MS = 2000;
const START_POLL_MS = 20;

/**
 * The compiled worker: under ts-jest this file runs from src/, but threads load JavaScript, so
 * they take the build's copy (npm test builds first).
 */
const WORKER_FILE = __filename.endsWith('.ts')
  ? resolve(__dirname, '../../dist/templates/render-worker.js')
  : resolve(__dirname, 'render-worker.js');

/**
 * Rendering off the event loop: every message and WEBHOOK text is rendered by a pool of worker
 * threads (piscina), each render with a hard wall-clock deadline and a heap cap. A render past its
 * deadline stops its thread (piscina terminates a thread whose task is aborted) and fails with a
 * TemplateRenderError naming the part it was in; nothing a template does can hold the API or a
 * worker's event loop. At most `threads` renders are handed to the pool at once and the rest wait
 * here, so a deadline counts rendering time, not time spent queued behind others.
 */
export class TemplateRenderer implements OnApplicationShutdown {
  /** Parses only (save-time checks), on the calling thread: parsing is linear and bounded by parseLimit. */
  private readonly parser = new LiquidSandbox();
  private pool: Piscina | null = null;
  private readonly slots: FairSemaphore;
  private readonly threads: number;

  constructor(
    private readonly options: RenderPoolOptions = { timeoutMs: DEFAULT_RENDER_TIMEOUT_MS },
  ) {
    this.threads = options.threads ?? Math.max(2, Math.min(4, availableParallelism()));
    // A project whose templates are slow (or hostile) holds all threads but one: the last one
    // stays for the other projects, whose renders then wait behind each other only.
    this.slots = new FairSemaphore(this.threads, Math.max(1, this.threads - 1));
  }

  /** The parse error of a Liquid source, or null when it parses. */
  validate(source: string): string | null {
    return this.parser.validate(source);
  }

  /** `tenant` (the project) decides the render's share of the threads. */
  async render(
    source: RenderSource,
    context: RenderContext,
    tenant = '',
  ): Promise<RenderedContent> {
    const outcome = await this.run(tenant, (progress) => ({
      kind: 'message',
      source,
      context,
      progress,
    }));
    return outcome.message as RenderedContent;
  }

  /** Plain text (no HTML escaping): workflow WEBHOOK bodies and header values. */
  async renderText(source: string, context: RenderContext, tenant = ''): Promise<string> {
    const outcome = await this.run(tenant, (progress) => ({
      kind: 'text',
      source,
      context,
      progress,
    }));
    return outcome.text as string;
  }

  async onApplicationShutdown(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    if (pool) await pool.destroy();
  }

  private run(
    tenant: string,
    task: (progress: SharedArrayBuffer) => RenderTask,
  ): Promise<RenderOutcome & { ok: true }> {
    return this.slots.run(tenant, async () => {
      const progress = new SharedArrayBuffer(PROGRESS_BYTES);
      const abort = new AbortController();
      // The budget counts from when the thread takes the task (it writes the time): starting a
      // thread to replace a stopped one can take a second on a loaded machine, and is not the
      // template's doing.
      const startedAt = new BigInt64Array(progress, STARTED_AT_OFFSET, 1);
      let timer: NodeJS.Timeout;
      const check = (): void => {
        const started = Number(Atomics.load(startedAt, 0));
        if (started === 0) {
          timer = setTimeout(check, START_POLL_MS);
          return;
        }
        const left = started + this.options.timeoutMs - Date.now();
        if (left <= 0) abort.abort();
        else timer = setTimeout(check, left);
      };
      timer = setTimeout(check, START_POLL_MS);
      let outcome: RenderOutcome;
      try {
        outcome = (await this.threadPool().run(task(progress), {
          signal: abort.signal,
        })) as RenderOutcome;
      } catch (error) {
        const part: RenderPart = new Int32Array(progress)[0] === 0 ? 'subject' : 'body';
        if (abort.signal.aborted) {
          throw new RenderLimitError(
            part,
            `rendering took longer than ${this.options.timeoutMs} ms`,
          );
        }
        if ((error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
          throw new RenderLimitError(part, 'rendering needed more memory than a message may use');
        }
        throw error;
      } finally {
        clearTimeout(timer);
      }
      if (!outcome.ok) throw new TemplateRenderError(outcome.part, outcome.message);
      return outcome;
    });
  }

  private threadPool(): Piscina {
    // Without it piscina's threads fail to start and every render waits forever (specs hung).
    if (!this.pool && !existsSync(WORKER_FILE))
      throw new Error(`${WORKER_FILE} is missing: run npm run build (npm test does)`);
    this.pool ??= new Piscina({
      filename: WORKER_FILE,
      minThreads: 1,
      maxThreads: this.threads,
      // Threads stay: starting one costs tens of milliseconds (liquidjs, html-to-text, markdown-it).
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: this.options.threadHeapMb ?? 128 },
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
