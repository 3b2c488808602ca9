import { rawSealContext } from './receipt-head.ts';

/**
 * The sealed message of a receipt (`raw`, kept with `trace.keep_raw`): AES-256-GCM under the
 * crosswalk keys (`CrosswalkKeys.seal`), its associated data naming the control id ({@link rawSealContext}), so that a
 * sealed message moved under another control id does not open. The writer seals with
 * {@link sealTraceRaw}, `trace --raw` opens with {@link openTraceRaw}.
 */

/** What seals and opens: the crosswalk keyring (`CrosswalkKeys`), by its shape. */
export interface TraceRawKeys {
  seal(plaintext: string | Buffer, context: string): string;
  open(sealed: string, context: string): Buffer;
}

/** The message as received under `controlId`, sealed for a receipt's `raw`. */
export function sealTraceRaw(keys: TraceRawKeys, controlId: string, message: string): string {
  return keys.seal(message, rawSealContext(controlId));
}

/** The message a receipt's `raw` holds. Throws when the keys or the control id differ. */
export function openTraceRaw(keys: TraceRawKeys, controlId: string, sealed: string): string {
  return keys.open(sealed, rawSealContext(controlId)).toString('utf8');
}
