import {
  LiquidSandbox,
  RenderContext,
  RenderedContent,
  RenderSource,
  TemplateRenderError,
} from './liquid-sandbox';

/** One render handed to a pool thread. `progress` is shared memory the thread writes its current part to. */
export type RenderTask =
  | { kind: 'message'; source: RenderSource; context: RenderContext; progress: SharedArrayBuffer }
  | { kind: 'text'; source: string; context: RenderContext; progress: SharedArrayBuffer };

/** Errors do not keep their class across threads, so a template's failure comes back as a value. */
export type RenderOutcome =
  | { ok: true; message?: RenderedContent; text?: string }
  | { ok: false; part: 'subject' | 'body'; message: string };

export const PART_CODES = { subject: 0, body: 1 } as const;
/** `progress`: an Int32 at 0 (the part, PART_CODES) and, at STARTED_AT_OFFSET, the ms time the thread took the task. */
export const STARTED_AT_OFFSET = 8;
export const PROGRESS_BYTES = 16;

/** Made on a thread's first task: the main thread imports this module for its constants only. */
let sandbox: LiquidSandbox | undefined;

/** The pool's entry point (piscina loads this module in each worker thread). */
export default async function render(task: RenderTask): Promise<RenderOutcome> {
  sandbox ??= new LiquidSandbox();
  const progress = new Int32Array(task.progress, 0, 1);
  Atomics.store(new BigInt64Array(task.progress, STARTED_AT_OFFSET, 1), 0, BigInt(Date.now()));
  try {
    if (task.kind === 'text') {
      Atomics.store(progress, 0, PART_CODES.body);
      return { ok: true, text: await sandbox.renderText(task.source, task.context) };
    }
    const message = await sandbox.render(task.source, task.context, (part) =>
      Atomics.store(progress, 0, PART_CODES[part]),
    );
    return { ok: true, message };
  } catch (error) {
    if (error instanceof TemplateRenderError)
      return { ok: false, part: error.part, message: error.message };
    throw error;
  }
}
