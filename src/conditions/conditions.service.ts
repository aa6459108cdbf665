import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { ApiException, FieldError } from '../common/errors/api-exception';
import { inTransaction } from '../database/in-transaction';
import { CompiledCondition, compileCondition } from './condition-compiler';
import { validateConditionShape } from './condition-validator';
import { ConditionGroup, isGroupNode, LIMITS } from './condition.types';
import { ConditionsRepository, StoredSegment } from './conditions.repository';

export interface ValidateOptions {
  projectId: string;
  /** Where the condition sits in the request body: "condition", "audienceFilter", "steps[2].condition". */
  path: string;
  /** The segment being saved, when validating a segment's own condition: it may not refer to itself. */
  selfSegmentId?: string;
}

export interface CompileServiceOptions {
  projectId: string;
  contactAlias?: string;
  paramOffset?: number;
  /** "count" when the query visits every contact (a count, a campaign audience); see CompileOptions.purpose. */
  purpose?: 'rows' | 'count';
}

/**
 * The one entry point to the condition language for every feature
 * (segments, campaign audience filters, workflow CONDITION steps):
 * validate → 422 errors with paths into the body; compile → a parameterised
 * WHERE fragment over `contacts <alias>`; matchesContact → one contact;
 * count → the audience's size. Every method that reads the database takes
 * the caller's EntityManager first: its transaction, or `dataSource.manager`.
 */
@Injectable()
export class ConditionsService {
  constructor(private readonly conditions: ConditionsRepository) {}

  /**
   * Every problem of a condition, structural and referential (unknown
   * segment ids of this project, a segment that would contain itself).
   */
  async validate(
    manager: EntityManager,
    input: unknown,
    options: ValidateOptions,
  ): Promise<FieldError[]> {
    const { errors, segmentRefs } = validateConditionShape(input, options.path);
    const self = options.selfSegmentId?.toLowerCase();
    const ids = [...new Set(segmentRefs.map((ref) => ref.segmentId))];
    const graph =
      ids.length > 0
        ? await this.loadSegments(manager, options.projectId, ids)
        : new Map<string, StoredSegment>();
    for (const ref of segmentRefs) {
      if (self && ref.segmentId === self) {
        errors.push({
          field: ref.path,
          message: 'A segment cannot be a member rule of itself',
          code: 'custom',
        });
        continue;
      }
      if (!graph.has(ref.segmentId)) {
        errors.push({
          field: ref.path,
          message: `Unknown segment id ${ref.segmentId}`,
          code: 'custom',
        });
        continue;
      }
      const via = self ? pathTo(graph, ref.segmentId, self) : null;
      if (via) {
        errors.push({
          field: ref.path,
          message: `Segment ${ref.segmentId} refers back to this segment (${[...via, self].join(' → ')}); segments cannot refer to themselves`,
          code: 'custom',
        });
      }
    }
    if (errors.length === 0)
      errors.push(
        ...(await this.checkExpandedSize(manager, input as ConditionGroup, graph, options)),
      );
    return errors;
  }

  /**
   * Membership rules inline other segments, so the SQL of a condition grows
   * with the segments it names, and with theirs. Without a bound, 50 rules
   * naming a segment of 50 rules naming another... would multiply. Checked
   * for the condition being saved and, when a segment changes, for every
   * segment that refers to it.
   */
  private async checkExpandedSize(
    manager: EntityManager,
    condition: ConditionGroup,
    graph: Map<string, StoredSegment>,
    options: ValidateOptions,
  ): Promise<FieldError[]> {
    const limit = LIMITS.maxExpandedRules;
    const self = options.selfSegmentId?.toLowerCase();
    const own = expandedRuleCount(condition, graph, new Map());
    if (own > limit) {
      return [
        {
          field: options.path,
          message: `With the segments it refers to inlined, this condition has ${own} rules; at most ${limit} are allowed`,
          code: 'too_big',
        },
      ];
    }
    if (!self) return [];
    const referrers = await this.conditions.referrersOf(manager, options.projectId, self);
    if (referrers.length === 0) return [];
    const wider = await this.loadSegments(manager, options.projectId, referrers);
    const overrides = new Map([[self, condition]]);
    for (const id of referrers) {
      const referrer = wider.get(id);
      const size = referrer ? expandedRuleCount(referrer.condition, wider, overrides) : 0;
      if (size > limit) {
        return [
          {
            field: options.path,
            message: `Segment ${id} refers to this segment and would have ${size} rules with it inlined; at most ${limit} are allowed`,
            code: 'too_big',
          },
        ];
      }
    }
    return [];
  }

  /** validate() that throws the 422; answers the condition typed once it is known to be valid. */
  async assertValid(
    manager: EntityManager,
    input: unknown,
    options: ValidateOptions,
  ): Promise<ConditionGroup> {
    const errors = await this.validate(manager, input, options);
    if (errors.length > 0) throw ApiException.validation(errors);
    return input as ConditionGroup;
  }

  /** Segment ids a (valid) condition names directly. */
  referencedSegments(condition: ConditionGroup, path = 'condition'): string[] {
    return [
      ...new Set(validateConditionShape(condition, path).segmentRefs.map((ref) => ref.segmentId)),
    ];
  }

  /**
   * A WHERE fragment over `contacts <alias>` (alias "c" by default) with
   * placeholders numbered after `paramOffset`. Membership rules are inlined
   * with the current conditions of the segments they name.
   */
  async compile(
    manager: EntityManager,
    condition: ConditionGroup,
    options: CompileServiceOptions,
  ): Promise<CompiledCondition> {
    const segments = await this.inlinedSegments(manager, options.projectId, condition);
    return compileCondition(condition, {
      projectId: options.projectId,
      contactAlias: options.contactAlias,
      paramOffset: options.paramOffset,
      purpose: options.purpose,
      segments,
    });
  }

  /**
   * Both shapes of one condition (alias "c", placeholders from $1): `rows`
   * for queries that fetch a few contacts, `count` for queries that visit
   * them all. Referenced segments are read once, so both see the same state.
   */
  async compileBoth(
    manager: EntityManager,
    condition: ConditionGroup,
    projectId: string,
  ): Promise<{ rows: CompiledCondition; count: CompiledCondition }> {
    const segments = await this.inlinedSegments(manager, projectId, condition);
    return {
      rows: compileCondition(condition, { projectId, segments, purpose: 'rows' }),
      count: compileCondition(condition, { projectId, segments, purpose: 'count' }),
    };
  }

  /** Whether one contact of the project matches now (workflow CONDITION steps). */
  async matchesContact(
    manager: EntityManager,
    projectId: string,
    contactId: string,
    condition: ConditionGroup,
  ): Promise<boolean> {
    return (await this.matchingContacts(manager, projectId, [contactId], condition)).has(contactId);
  }

  /** Which of these contacts of the project match now, one statement (workflow CONDITION steps of many executions). */
  async matchingContacts(
    manager: EntityManager,
    projectId: string,
    contactIds: string[],
    condition: ConditionGroup,
  ): Promise<Set<string>> {
    const compiled = await this.compile(manager, condition, {
      projectId,
      contactAlias: 'c',
      paramOffset: 1,
    });
    return new Set(await this.conditions.matchingIds(manager, contactIds, compiled));
  }

  /** How many contacts of the project match now. */
  async count(
    manager: EntityManager,
    projectId: string,
    condition: ConditionGroup,
  ): Promise<number> {
    return this.countCompiled(
      manager,
      await this.compile(manager, condition, { projectId, contactAlias: 'c', purpose: 'count' }),
    );
  }

  /**
   * Counts the contacts matching a condition compiled with alias "c" and
   * purpose "count", with the plan settings of wholeProjectSettings(): inside
   * the manager's transaction (they last until it ends), or in one of its own.
   */
  countCompiled(manager: EntityManager, compiled: CompiledCondition): Promise<number> {
    return inTransaction(manager, (m) => this.conditions.count(m, compiled));
  }

  /** The current conditions of the segments a condition's membership rules name, transitively. */
  private async inlinedSegments(
    manager: EntityManager,
    projectId: string,
    condition: ConditionGroup,
  ): Promise<Map<string, ConditionGroup>> {
    const ids = this.referencedSegments(condition);
    const graph =
      ids.length > 0
        ? await this.loadSegments(manager, projectId, ids)
        : new Map<string, StoredSegment>();
    const segments = new Map<string, ConditionGroup>();
    for (const [id, segment] of graph) segments.set(id, segment.condition);
    return segments;
  }

  private async loadSegments(
    manager: EntityManager,
    projectId: string,
    ids: string[],
  ): Promise<Map<string, StoredSegment>> {
    const rows = await this.conditions.segmentGraph(manager, projectId, ids);
    return new Map(rows.map((row) => [row.id, row]));
  }
}

/** Breadth-first path of segment ids from `from` to `to` through segment_refs, or null. */
function pathTo(graph: Map<string, StoredSegment>, from: string, to: string): string[] | null {
  const previous = new Map<string, string | null>([[from, null]]);
  const queue = [from];
  while (queue.length > 0) {
    const current = queue.shift() as string;
    if (current === to) {
      const path: string[] = [];
      for (let at: string | null = previous.get(current) ?? null; at; at = previous.get(at) ?? null)
        path.unshift(at);
      return path;
    }
    for (const next of graph.get(current)?.segment_refs ?? []) {
      if (!previous.has(next)) {
        previous.set(next, current);
        queue.push(next);
      }
    }
  }
  return null;
}

/**
 * Rules of a condition with the segments named by its membership rules
 * inlined, the way the compiler inlines them (a segment already being
 * inlined, a cycle, counts as nothing). `overrides` replaces stored
 * conditions (the one being saved).
 */
function expandedRuleCount(
  condition: ConditionGroup,
  graph: Map<string, StoredSegment>,
  overrides: Map<string, ConditionGroup>,
  stack: string[] = [],
): number {
  let total = 0;
  for (const node of condition.conditions) {
    if (isGroupNode(node)) {
      total += expandedRuleCount(node, graph, overrides, stack);
    } else if (node.field === 'segment') {
      const id = String(node.value).toLowerCase();
      const target = overrides.get(id) ?? graph.get(id)?.condition;
      total +=
        target && !stack.includes(id)
          ? Math.max(1, expandedRuleCount(target, graph, overrides, [...stack, id]))
          : 1;
    } else {
      total += 1;
    }
  }
  return total;
}
