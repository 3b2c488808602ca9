import { isDelimiterChar, parseEr7, segmentLines, type Er7Message } from './er7.ts';

/** What a refusal (AR/AE) of a message that cannot be processed can echo of its MSH. */
export interface RefusalHeader {
  /** The MSH read as a whole (delimiters and fields), when it can be. */
  message: Er7Message | undefined;
  /**
   * MSH-10 as written, read by MSH-1 alone when MSH-2 is unusable (so that `message` is
   * undefined); undefined when there is no MSH line or no MSH-10.
   */
  controlId: string | undefined;
}

/**
 * The MSH of a message for its refusal: the first segment line (after leading blank lines, spaces,
 * stray VT bytes and a BOM), parsed alone. When its encoding characters are unusable, MSH-10 is still
 * read by splitting on MSH-1, so that every refusal names the message in MSA-2 whenever its MSH-10
 * can be read (a sender matching ACKs by MSA-2 would otherwise wait for it forever).
 */
export function refusalHeaderOf(text: string): RefusalHeader {
  const first = segmentLines(text)[0];
  if (first === undefined) return { message: undefined, controlId: undefined };
  try {
    const message = parseEr7(first);
    return { message, controlId: undefined };
  } catch {
    // Fall through: MSH-10 by MSH-1 alone.
  }
  const field = first.charAt(3);
  if (!first.startsWith('MSH') || !isDelimiterChar(field)) {
    return { message: undefined, controlId: undefined };
  }
  // [MSH, MSH-2, MSH-3, …]: MSH-n is at n - 1.
  const controlId = first.split(field)[9]?.trim() ?? '';
  return { message: undefined, controlId: controlId === '' ? undefined : controlId };
}
