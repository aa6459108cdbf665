import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { isMainThread } from 'node:worker_threads';
import type { RenderOutcome, RenderTask } from './render-worker';

/** Niceness of a render thread: below the event loop that answers requests (0). */
const RENDER_THREAD_NICENESS = 10;

/**
 * On Linux a thread has its own scheduling priority: a render thread running a template to its
 * deadline then takes a core only when the event loops of this machine's processes leave it
 * idle, so one tenant's slow templates do not slow other tenants' requests. Elsewhere (or where
 * /proc is not mounted) threads keep the process's priority.
 */
function lowerThreadPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, RENDER_THREAD_NICENESS);
  } catch {
    // Not Linux, or not allowed: nothing to do.
  }
}

// Before the renderer's modules load: a thread started to replace one stopped at its deadline
// spends most of its start loading them, and that start is render work, not request work.
if (!isMainThread) lowerThreadPriority();
const worker = import('./render-worker');

/** The pool's entry point (piscina loads this module in each worker thread). */
export default async function render(task: RenderTask): Promise<RenderOutcome[]> {
  return (await worker).default(task);
}
