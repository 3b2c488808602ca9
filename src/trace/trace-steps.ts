import type { QueryStepTrace, ReceiptTrace } from './message-trace-reader.ts';

/** The kinds of step of one message, in the order they happen. */
export const TRACE_STEP_KINDS = [
  'answer',
  'patient',
  'query',
  'submission',
  'poll',
  'result',
  'delivery',
] as const;
export type TraceStepKind = (typeof TRACE_STEP_KINDS)[number];

/** One step of a message: when (epoch ms; null when not kept), its code, and a line about it. */
export interface TraceStep {
  kind: TraceStepKind;
  at: number | null;
  /** The ACK code or HTTP status, `opened`/`joined`, an `ERR_*` code, an outcome, a state. */
  code: string | null;
  /** The query it belongs to (`<category>:<seq>`), for the query's steps. */
  query?: string;
  /** What happened, in words (no identifier: times as ISO 8601). */
  text: string;
}

const iso = (ms: number | undefined): string | undefined =>
  ms === undefined || !Number.isFinite(ms) ? undefined : new Date(ms).toISOString();

/** The parts that are there, joined with `, `. */
const parts = (...list: (string | false | undefined)[]): string =>
  list.filter((p): p is string => typeof p === 'string' && p !== '').join(', ');

function queryStepsOf(q: QueryStepTrace): TraceStep[] {
  const query = `${q.category}:${q.seq}`;
  const t = q.trace;
  const steps: TraceStep[] = [];
  if (t === null) {
    return [
      {
        kind: 'query',
        at: null,
        code: q.coalesced ? 'joined' : 'opened',
        query,
        text: `query ${query} ${q.coalesced ? 'joined' : 'opened'}: no steps kept (not written yet, or expired)`,
      },
    ];
  }
  steps.push({
    kind: 'query',
    at: t.opened_at ?? t.queued_at ?? null,
    code: q.coalesced ? 'joined' : 'opened',
    query,
    text: parts(
      `query ${query} ${q.coalesced ? 'joined' : 'opened'}`,
      t.feed !== undefined && `by ${t.feed}`,
      t.messages !== undefined && `${t.messages} message(s)`,
      t.queued_at !== undefined && `queued ${iso(t.queued_at)}`,
      t.job_id !== undefined && `job ${t.job_id}`,
    ),
  });
  if (
    t.claimed_at !== undefined ||
    t.submitted_at !== undefined ||
    t.attempts !== undefined ||
    t.last_error !== undefined
  ) {
    steps.push({
      kind: 'submission',
      at: t.submitted_at ?? t.claimed_at ?? null,
      code: t.submitted_at !== undefined ? 'submitted' : (t.last_error ?? 'claimed'),
      query,
      text: parts(
        t.submitted_at !== undefined ? 'submitted' : 'not submitted yet',
        t.remote_job_id !== undefined && `remote job ${t.remote_job_id}`,
        t.attempts !== undefined && `${t.attempts} attempt(s)`,
        t.claimed_at !== undefined && `first run ${iso(t.claimed_at)}`,
        t.last_error !== undefined && `last error ${t.last_error}`,
      ),
    });
  }
  if (t.polls !== undefined || t.last_poll_at !== undefined) {
    steps.push({
      kind: 'poll',
      at: t.last_poll_at ?? null,
      code: null,
      query,
      text: `${t.polls ?? 0} poll(s)${t.last_poll_at === undefined ? '' : `, last ${iso(t.last_poll_at)}`}`,
    });
  }
  if (t.ended_at !== undefined || t.outcome !== undefined) {
    steps.push({
      kind: 'result',
      at: t.ended_at ?? null,
      code: t.error_code ?? t.outcome ?? null,
      query,
      text: parts(
        `ended ${t.outcome ?? 'unknown'}`,
        t.error_code !== undefined && t.error_code,
        t.event_id !== undefined && `result event ${t.event_id}`,
      ),
    });
  }
  const d = q.delivery;
  if (d !== null) {
    const webhook =
      d.webhook_attempts !== undefined ||
      d.webhook_state !== undefined ||
      d.webhook_last_answer !== undefined;
    steps.push({
      kind: 'delivery',
      at: d.webhook_ended_at ?? d.webhook_last_at ?? d.outbound_at ?? d.unchanged_at ?? null,
      code:
        d.webhook_state ??
        d.webhook_last_answer ??
        (d.outbound_at !== undefined
          ? 'outbound'
          : d.unchanged_at !== undefined
            ? 'unchanged'
            : null),
      query,
      text:
        parts(
          d.unchanged_at !== undefined && `held back unchanged ${iso(d.unchanged_at)}`,
          d.outbound_at !== undefined && `outbound queue ${iso(d.outbound_at)}`,
          webhook &&
            parts(
              `webhook ${d.webhook_state ?? 'pending'}`,
              d.webhook_attempts !== undefined && `${d.webhook_attempts} attempt(s)`,
              d.webhook_first_at !== undefined && `first ${iso(d.webhook_first_at)}`,
              d.webhook_last_at !== undefined && `last ${iso(d.webhook_last_at)}`,
              d.webhook_last_answer !== undefined && `last answer ${d.webhook_last_answer}`,
            ),
        ) || 'delivery: nothing kept',
    });
  }
  return steps;
}

/**
 * The steps of one receipt, in order: its answer, its patient (when known), then for each query
 * it opened or joined: the query, its submission, its polls, its result and the result's
 * delivery, as far as each went. Pure: the CLI prints them, a web page may show them.
 */
export function traceSteps(receipt: ReceiptTrace): TraceStep[] {
  const steps: TraceStep[] = [
    {
      kind: 'answer',
      at: receipt.at,
      code: receipt.answer.code,
      text: parts(
        `${receipt.feed} ${receipt.type ?? '(no type)'}`,
        `from ${receipt.sender.application ?? '-'}/${receipt.sender.facility ?? '-'}`,
        `answered ${receipt.answer.code}${receipt.answer.error === null ? '' : ` ${receipt.answer.error}`}`,
        receipt.state,
      ),
    },
  ];
  if (receipt.psid !== null) {
    steps.push({
      kind: 'patient',
      at: receipt.at,
      code: null,
      text: parts(
        `patient ${receipt.psid}`,
        receipt.version !== null && `record version ${receipt.version}`,
      ),
    });
  }
  for (const q of receipt.queries) steps.push(...queryStepsOf(q));
  return steps;
}
