/**
 * What senders put before the first segment of a frame or a message, and what is skipped there:
 * blank lines (CR, LF), spaces and tabs, stray VT bytes (an MLLP start block sent twice, or a
 * `mllp_send` file with CR LF between its frames), and a UTF-8 byte order mark. None of them can
 * start a segment, so skipping them changes no message; inside a message they stay as they are.
 */
const NOISE = new Set([0x0d, 0x0a, 0x20, 0x09, 0x0b]);

/** The bytes from the first one that is not leading noise (a UTF-8 BOM anywhere in it skipped). */
export function skipLeadingNoise(bytes: Buffer): Buffer {
  let i = 0;
  for (;;) {
    const byte = bytes[i];
    if (byte !== undefined && NOISE.has(byte)) i += 1;
    else if (byte === 0xef && bytes[i + 1] === 0xbb && bytes[i + 2] === 0xbf) i += 3;
    else break;
  }
  return i === 0 ? bytes : bytes.subarray(i);
}

/** The same on decoded text (U+FEFF for the BOM). */
export function skipLeadingNoiseText(text: string): string {
  return text.replace(/^[\r\n \t\v\uFEFF]+/, '');
}
