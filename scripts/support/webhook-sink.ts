// A webhook receiver on the host for scripts/verify-image.sh: verifies every request's Standard
// Webhooks signature with the reference verifier (tools/webhook-receiver.ts) and prints one JSON
// line per request on standard output: first {"url": ...}, then {webhook_id, verified, status,
// type, ccsr_category, query_status} (no patient id, no result body). Stops on SIGTERM/SIGINT.
import { startWebhookReceiver, type WebhookReceiver } from '../../tools/webhook-receiver.ts';

const secret = process.env.WEBHOOK_SECRET;
if (secret === undefined || secret === '') {
  process.stderr.write('webhook-sink: set WEBHOOK_SECRET\n');
  process.exit(2);
}

const receiver = await startWebhookReceiver({ secret });
process.stdout.write(`${JSON.stringify({ url: receiver.url })}\n`);

let printed = 0;
const print = (r: WebhookReceiver): boolean => {
  for (; printed < r.attempts.length; printed += 1) {
    const attempt = r.attempts[printed];
    if (attempt === undefined) break;
    const event = r.events.find((e) => e.webhookId === attempt.webhookId)?.payload;
    process.stdout.write(
      `${JSON.stringify({
        webhook_id: attempt.webhookId,
        verified: attempt.verified,
        status: attempt.status,
        type: event?.type ?? null,
        ccsr_category: event?.ccsr_category ?? null,
        query_status: event?.status ?? null,
      })}\n`,
    );
  }
  return false;
};
void receiver.until(print);

const stop = () => {
  void receiver.close().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
