/**
 * `Name: value` blocks as reports carry them: the per-message and per-recipient
 * blocks of a delivery-status part, a feedback report, a returned message's
 * headers. Names are lower-cased; values are unfolded and their whitespace
 * collapsed, so a folded `Diagnostic-Code` reads as one line.
 */
export type FieldBlock = Map<string, string[]>;

const FIELD = /^([!-9;-~]+)[ \t]*:[ \t]*(.*)$/;
/** Reports have a handful of blocks; a part with thousands is not a report worth reading in full. */
const MAX_BLOCKS = 500;

export function parseFieldBlocks(text: string): FieldBlock[] {
  const blocks: FieldBlock[] = [];
  let block: FieldBlock = new Map();
  let name: string | null = null;
  const flush = () => {
    if (block.size > 0) blocks.push(collapse(block));
    block = new Map();
    name = null;
  };
  for (const line of text.split(/\r?\n/)) {
    if (blocks.length >= MAX_BLOCKS) break;
    if (line.trim() === '') {
      flush();
      continue;
    }
    if (/^[ \t]/.test(line)) {
      const values = name === null ? undefined : block.get(name);
      if (values) values[values.length - 1] += ' ' + line;
      continue;
    }
    const field = FIELD.exec(line);
    if (!field) {
      name = null;
      continue;
    }
    name = field[1].toLowerCase();
    const values = block.get(name) ?? [];
    values.push(field[2]);
    block.set(name, values);
  }
  flush();
  return blocks;
}

/** The header block at the top of a message or headers part (up to its first blank line). */
export function parseHeaderBlock(text: string): FieldBlock {
  const end = /\r?\n\r?\n/.exec(text);
  return parseFieldBlocks(end ? text.slice(0, end.index) : text)[0] ?? new Map();
}

export function firstField(block: FieldBlock | undefined, name: string): string | null {
  const value = block?.get(name)?.[0];
  return value === undefined || value === '' ? null : value;
}

/** `rfc822; user@host`, `utf-8; user@host`, `smtp; 550 …`: the value without its type. */
export function withoutType(value: string): string {
  return value.replace(/^\s*[A-Za-z0-9-]+\s*;\s*/, '').trim();
}

const ADDRESS_CHAR = /[^\s<>,;:"()[\]@]/;

/**
 * The first address in a field value (`<a@b>`, `Name <a@b>`, `a@b`), lower-cased
 * because contacts are stored lower-cased; RFC 6533's `\x{HHHH}` escapes decoded.
 */
export function addressIn(value: string | null): string | null {
  if (value === null) return null;
  const decoded = value.replace(/\\x\{([0-9A-Fa-f]{1,6})\}/g, (escape, hex: string) => {
    const code = parseInt(hex, 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : escape;
  });
  const address = firstAddress(decoded);
  return address === null ? null : address.replace(/\.$/, '').toLowerCase();
}

/**
 * Grown outwards from each `@`: a regex such as `[^…]+@[^…]+` backtracks
 * quadratically over a long value without one, and header values reach 256 KB.
 */
function firstAddress(text: string): string | null {
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    let start = at;
    while (start > 0 && ADDRESS_CHAR.test(text[start - 1])) start--;
    let end = at + 1;
    while (end < text.length && ADDRESS_CHAR.test(text[end])) end++;
    if (start < at && end > at + 1) return text.slice(start, end);
  }
  return null;
}

function collapse(block: FieldBlock): FieldBlock {
  for (const [name, values] of block) {
    block.set(
      name,
      values.map((value) => value.replace(/\s+/g, ' ').trim()),
    );
  }
  return block;
}
