/**
 * Auto-replies and vacation mail (RFC 3834 and the headers older responders
 * use): recognised so they are ignored, not counted as bounces. `headers` maps
 * lower-case names to raw values.
 */
export function isAutoReply(headers: (name: string) => string | null): boolean {
  const autoSubmitted = headers('auto-submitted');
  if (autoSubmitted !== null && keyword(autoSubmitted) !== 'no') return true;
  for (const name of ['x-autoreply', 'x-autorespond']) {
    const value = headers(name);
    if (value !== null && !['no', 'false', '0'].includes(keyword(value))) return true;
  }
  return keyword(headers('precedence') ?? '') === 'auto_reply';
}

function keyword(value: string): string {
  return value.split(';')[0].trim().toLowerCase();
}
