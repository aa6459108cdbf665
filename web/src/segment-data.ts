import { useEffect, useState } from 'react';
import { api, unwrap, type ApiError } from './api/client';
import type { ConditionGroup } from './conditions';
import { asApiError, useLoad } from './ui';

/**
 * What the condition builder and its pages ask of the API: the project's segments and event names
 * (the builder's choices, and names for segment ids in words), and the live count of a condition.
 */

/** The project's segments (the first 100, as GET /segments lists them). */
export function useSegments() {
  return useLoad(
    () =>
      unwrap(api.GET('/segments', { params: { query: { limit: 100 } } })).then((r) => r.data.items),
    [],
  );
}

/** Segments a membership rule may name (id and name), all but `exceptId` (a segment's own). */
export function useSegmentChoices(exceptId?: string) {
  const state = useSegments();
  return (state.data ?? [])
    .filter((s) => s.id !== exceptId)
    .map((s) => ({ id: s.id, name: s.name }));
}

/** A segment id in words: its name once the segments are known, else the id itself. */
export function segmentNamer(segments: { id: string; name: string }[]) {
  return (id: string) => segments.find((s) => s.id === id)?.name ?? id;
}

/** Event names the project has seen, offered for event rules, triggers and filters. */
export function useEventNames(): string[] {
  const state = useLoad(
    () =>
      unwrap(api.GET('/events/names', { params: { query: { limit: 100 } } })).then((r) =>
        r.data.items.map((n) => n.name),
      ),
    [],
  );
  return state.data ?? [];
}

export interface SegmentPreview {
  count?: number;
  /** Emails of the newest matching contacts. */
  sample?: string[];
  error?: ApiError;
  /** A count of this condition is awaited (the last answer, if any, stays). */
  busy: boolean;
}

/**
 * POST /segments/preview of `condition`, `delayMs` after it last changed (typing waits it out),
 * the latest answer winning; nothing is asked while `condition` is undefined. A change of delay
 * alone asks again: the audience of a campaign is counted anew whenever its kind changes.
 */
export function useSegmentPreview(
  condition: ConditionGroup | undefined,
  delayMs: number,
): SegmentPreview {
  const key = condition === undefined ? undefined : JSON.stringify(condition);
  const [state, setState] = useState<Omit<SegmentPreview, 'busy'> & { key?: string }>({});
  useEffect(() => {
    if (key === undefined) return;
    let current = true;
    // Asking again for a condition already answered: marked busy until the new answer.
    setState((s) => (s.key === undefined ? s : { ...s, key: undefined }));
    const timer = setTimeout(() => {
      unwrap(api.POST('/segments/preview', { body: { condition: JSON.parse(key) } })).then(
        (r) =>
          current &&
          setState({ key, count: r.data.count, sample: r.data.sample.map((c) => c.email) }),
        (e: unknown) => current && setState({ key, error: asApiError(e) }),
      );
    }, delayMs);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [key, delayMs]);
  return {
    count: state.count,
    sample: state.sample,
    error: state.error,
    busy: key !== undefined && state.key !== key,
  };
}
