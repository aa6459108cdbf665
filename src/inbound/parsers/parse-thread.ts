import type { ParsedInbound } from '../parsed-inbound';
import { parseInbound } from './index';

/**
 * The inbound parse pool's entry point (piscina loads this module in its thread): one batch of
 * raw messages. They arrive as Uint8Arrays (structured clone drops the Buffer class).
 */
export default function parseBatch(raws: Uint8Array[]): Promise<ParsedInbound[]> {
  return Promise.all(
    raws.map((raw) => parseInbound(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength))),
  );
}
