import type { EntityManager } from 'typeorm';
import type { ContactRow } from '../contacts/contact.row';
import type { EventRow } from '../events/event.row';
import type { Email } from '../sending/email.entity';
import type { RenderedEmail } from '../sending/emails.service';
import type { Template } from '../templates/template.entity';
import type { StepTree } from './workflow-steps';
import type { DueExecution, PendingTransition, StepRun } from './workflow-executions.repository';

/** Work to do once the steps' transaction has committed. */
export interface AfterCommit {
  jobs: DueExecution[];
  emails: Email[];
  events: { rows: EventRow[]; email: string | null }[];
}

/** A SEND_EMAIL step's message rendered before the batch's transaction, for the execution as it was read then. */
export interface Prerendered {
  version: number;
  stepId: string;
  template: Template;
  contact: ContactRow;
  rendered: Promise<RenderedEmail>;
}

/**
 * The steps run in one transaction (one job's, or a batch of jobs'): what
 * they write at its end, what follows its commit, and the reads made once
 * for all of them.
 */
export class StepBatch {
  readonly after: AfterCommit = { jobs: [], emails: [], events: [] };
  /** A step's record waiting for the transition that follows it, by execution (one step of an execution per batch). */
  readonly runs = new Map<string, StepRun>();
  /** Step records written on their own (before the transitions' records). */
  readonly records: StepRun[] = [];
  readonly transitions = new Map<string, PendingTransition>();
  /** Executions whose transition was not written: moved within the transaction by the events trigger. */
  readonly overtaken = new Set<string>();
  /** The definition each execution's step ran under (the process's cache may move on meanwhile). */
  readonly trees = new Map<string, StepTree>();
  /** SEND_EMAIL steps' emails, inserted at the end, with their contacts' addresses (for publishing `email.queued`). */
  readonly emails: { email: Email; address: string }[] = [];
  /** Characters of the messages rendered so far (subject, HTML, text): what the batch holds until its write. */
  emailChars = 0;
  /** SEND_EMAIL messages whose rendering began before the steps ran, by execution (see startCompositions). */
  readonly composing = new Map<string, Promise<Email>>();
  /** Reads shared by the batch's steps (templates, senders), by key. */
  readonly loads = new Map<string, Promise<unknown>>();
  /** Made before the steps ran, for the steps that need them (updates first, then reads: the reads see them). */
  readonly updates = new Map<string, { row: ContactRow; events: EventRow[] } | null>();
  readonly contacts = new Map<string, ContactRow>();
  readonly matches = new Map<string, boolean>();
  readonly triggerNames = new Map<string, string | null>();

  /**
   * SEND_EMAIL steps that run in a later batch: their message was not rendered before this one's
   * transaction, or was rendered for an execution, template or contact that changed since.
   */
  readonly later = new Set<string>();

  /**
   * `prerendered`: the batch's messages rendered before its transaction (runBatch), by execution;
   * null when the steps may render in the transaction (a single job's run, which is rare).
   */
  constructor(
    readonly manager: EntityManager,
    readonly prerendered: Map<string, Prerendered> | null = null,
  ) {}

  once<T>(key: string, load: () => Promise<T>): Promise<T> {
    let loaded = this.loads.get(key) as Promise<T> | undefined;
    if (!loaded) {
      loaded = load();
      this.loads.set(key, loaded);
    }
    return loaded;
  }

  /** Where the lists stand before one execution's step (undone should the step fail). */
  mark(): number[] {
    return [
      this.records.length,
      this.emails.length,
      this.after.jobs.length,
      this.after.emails.length,
      this.after.events.length,
    ];
  }

  undo(executionId: string, mark: number[]): void {
    this.records.length = mark[0];
    this.emails.length = mark[1];
    this.after.jobs.length = mark[2];
    this.after.emails.length = mark[3];
    this.after.events.length = mark[4];
    this.runs.delete(executionId);
    this.transitions.delete(executionId);
  }
}
