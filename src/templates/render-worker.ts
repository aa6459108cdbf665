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

const sandbox = new LiquidSandbox();

/** The pool's entry point (piscina loads this module in each worker thread). */
export default async function render(task: RenderTask): Promise<RenderOutcome> {
  const progress = new Int32Array(task.progress);
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
