/**
 * Where request validation parses long Liquid sources: a TemplateRenderer of this process
 * registers its render threads here, so a body of hundreds of kilobytes is parsed there (niced,
 * shared fairly between projects) instead of on the event loop that answers every tenant. Several
 * renderers may live in one process (tests start several apps): any live one will do.
 */
export type ParseCheck = (source: string) => Promise<string | null>;

const checks = new Set<ParseCheck>();

/** Registers a renderer's check; the returned function unregisters it (at its shutdown). */
export function registerParseOffload(check: ParseCheck): () => void {
  checks.add(check);
  return () => checks.delete(check);
}

/** A registered check, or undefined (no renderer in this process: parse where the caller is). */
export function parseOffload(): ParseCheck | undefined {
  return checks.values().next().value;
}
