import type { MessageTrace, ReceiptTrace } from '../../trace/message-trace-reader.ts';
import { traceSteps } from '../../trace/trace-steps.ts';

const iso = (ms: number | null): string =>
  ms === null || !Number.isFinite(ms) ? '-'.padEnd(24) : new Date(ms).toISOString();

/** The lines of one receipt: a heading, then one line per step (time, kind, code, words). */
export function receiptLines(receipt: ReceiptTrace, index: number, of: number): string[] {
  const lines = [
    `receipt ${index + 1} of ${of} (partition ${receipt.partition}${receipt.has_raw ? ', message kept sealed' : ''})`,
  ];
  for (const step of traceSteps(receipt)) {
    lines.push(
      `  ${iso(step.at)}  ${step.kind.padEnd(10)}  ${(step.code ?? '-').padEnd(20)}  ${step.text}`,
    );
  }
  return lines;
}

/**
 * One message as `trace` prints it: the control id, then one block per receipt (oldest first),
 * and the opened message after its receipt's steps when `opened` has one for it (`--raw`).
 */
export function messageText(
  trace: MessageTrace,
  opened?: ReadonlyMap<ReceiptTrace, string>,
): string[] {
  const lines = [
    `control id ${trace.control_id}: ${trace.receipts.length} receipt(s)${trace.skipped > 0 ? `, ${trace.skipped} unreadable entr${trace.skipped === 1 ? 'y' : 'ies'} skipped` : ''}`,
  ];
  trace.receipts.forEach((receipt, i) => {
    lines.push('', ...receiptLines(receipt, i, trace.receipts.length));
    const message = opened?.get(receipt);
    if (message !== undefined) {
      lines.push('  message as received:');
      for (const line of message.split(/\r\n|\r|\n/)) lines.push(`    ${line}`);
    }
  });
  return lines;
}
