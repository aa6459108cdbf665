import type { ReactNode } from 'react';
import { Pager, Show, useCursor, useLoad, type Loaded, type Page } from './ui';

/** A paged list as a page holds it: what is loaded and where its cursor stands. */
export interface PagedList<P extends Page<unknown>> {
  state: Loaded<P>;
  paging: ReturnType<typeof useCursor>;
}

/**
 * Loads one page of a list at a time. A change of `filters` starts again from the first page;
 * a change of `refresh` (a poll tick, an action's round) reads the same page again.
 */
export function usePagedList<P extends Page<unknown>>(
  load: (cursor: string | undefined) => Promise<P>,
  filters: unknown[],
  refresh: unknown[] = [],
): PagedList<P> {
  const paging = useCursor(JSON.stringify(filters));
  const state = useLoad(() => load(paging.cursor), [...filters, paging.cursor, ...refresh]);
  return { state, paging };
}

/** A table whose columns are headed by `columns`; the rows are the caller's `<tr>`s. */
export function Table({
  columns,
  caption,
  children,
}: {
  columns: ReactNode[];
  caption?: string;
  children: ReactNode;
}) {
  return (
    <div className="table-wrap">
      <table>
        {caption && <caption className="visually-hidden">{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column, i) => (
              <th key={i} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/**
 * A paged list's current page: its rows in a table (or `empty` when there are none) and the
 * Previous / Next pager named `label`, shown under an empty page too unless `pagerWhenEmpty` is false.
 */
export function PagedTable<P extends Page<unknown>>({
  list,
  label,
  empty,
  columns,
  caption,
  row,
  pagerWhenEmpty = true,
}: {
  list: PagedList<P>;
  label: string;
  empty: ReactNode;
  columns: ReactNode[];
  caption?: string;
  row: (item: P['items'][number]) => ReactNode;
  pagerWhenEmpty?: boolean;
}) {
  const { state, paging } = list;
  return (
    <Show state={state}>
      {(data) => {
        const rows =
          data.items.length === 0 ? (
            <p>{empty}</p>
          ) : (
            <Table columns={columns} caption={caption}>
              {data.items.map((item) => row(item))}
            </Table>
          );
        if (data.items.length === 0 && !pagerWhenEmpty) return rows;
        return (
          <>
            {rows}
            <Pager page={paging.page} data={data} paging={paging} label={label} />
          </>
        );
      }}
    </Show>
  );
}
