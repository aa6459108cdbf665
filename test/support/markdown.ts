/**
 * The bodies of the fenced code blocks whose info string is exactly `<language> <marker>`: how
 * specs find the snippets the docs show (GitHub renders such a block in its language and ignores
 * the marker).
 */
export function fencedBlocks(markdown: string, language: string, marker: string): string[] {
  const blocks: string[] = [];
  let open: { fence: string; keep: boolean; lines: string[] } | null = null;
  for (const line of markdown.split('\n')) {
    if (!open) {
      const start = /^ {0,3}(`{3,}|~{3,})\s*(.*)$/.exec(line);
      if (start)
        open = {
          fence: start[1],
          keep: start[2].trim().split(/\s+/).join(' ') === `${language} ${marker}`,
          lines: [],
        };
    } else if (new RegExp(`^ {0,3}${open.fence[0]}{${open.fence.length},}\\s*$`).test(line)) {
      if (open.keep) blocks.push(open.lines.join('\n'));
      open = null;
    } else {
      open.lines.push(line);
    }
  }
  return blocks;
}
