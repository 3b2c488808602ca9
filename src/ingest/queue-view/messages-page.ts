import type { MessageTrace, RecentPage, ReceiptTrace } from '../../trace/message-trace-reader.ts';
import { FEEDS, type Feed } from '../../trace/trace-keys.ts';
import { traceSteps } from '../../trace/trace-steps.ts';
import { escapeHtml as e } from './html-escape.ts';

/** Where the pages link to: the view's root (the board), the list, one message, sign-out. */
export interface MessagesPaths {
  board: string;
  list: string;
  logout: string;
}

const STYLE = `
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1a1a1a; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; width: 100%; margin: 1rem 0; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.code, td.time { font-family: ui-monospace, monospace; white-space: nowrap; }
form { margin: 1rem 0; }
.note { color: #555; }
section.receipt { margin-top: 2rem; }
`;

/** A time (epoch ms) as ISO 8601, UTC; `-` when not kept. */
const time = (ms: number | null | undefined): string =>
  ms === null || ms === undefined || !Number.isFinite(ms) ? '-' : new Date(ms).toISOString();

/** A patient service id's first characters: enough to tell rows apart, never a local id. */
export const shortPsid = (psid: string): string =>
  psid.length > 8 ? `${psid.slice(0, 8)}…` : psid;

function layout(title: string, paths: MessagesPaths, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)} · queue view</title>
<style>${STYLE}</style>
</head>
<body>
<nav><a href="${e(paths.board)}">Queues</a><a href="${e(paths.list)}">Messages</a><a href="${e(paths.logout)}">Sign out</a></nav>
${body}
</body>
</html>
`;
}

/** The link to one message's trace page. */
export const messageHref = (paths: MessagesPaths, controlId: string): string =>
  `${paths.list}/${encodeURIComponent(controlId)}`;

/** The list's address with `feed` and `before`. */
function listHref(paths: MessagesPaths, feed: Feed | undefined, before?: number): string {
  const query = new URLSearchParams();
  if (feed !== undefined) query.set('feed', feed);
  if (before !== undefined) query.set('before', String(before));
  const text = query.toString();
  return text === '' ? paths.list : `${paths.list}?${text}`;
}

/**
 * The Messages page: the newest messages (of `feed` when given), a row per control id and
 * partition, each linking to its trace; a link to the older ones when there are more.
 */
export function messagesListPage(
  page: RecentPage,
  options: { paths: MessagesPaths; feed?: Feed; traceEnabled: boolean },
): string {
  const { paths, feed } = options;
  const choices = [
    `<option value=""${feed === undefined ? ' selected' : ''}>every feed</option>`,
    ...FEEDS.map((f) => `<option value="${e(f)}"${f === feed ? ' selected' : ''}>${e(f)}</option>`),
  ].join('');
  const rows = page.messages.map((m) => {
    const r = m.latest;
    const answer = r.answer.error === null ? r.answer.code : `${r.answer.code} ${r.answer.error}`;
    return `<tr data-control-id="${e(m.control_id)}">
<td class="time">${e(time(m.at))}</td>
<td>${e(r.feed)}</td>
<td class="code"><a href="${e(messageHref(paths, m.control_id))}">${e(m.control_id)}</a></td>
<td>${e(r.sender.application ?? '-')}/${e(r.sender.facility ?? '-')}</td>
<td>${e(r.type ?? '-')}</td>
<td class="code">${e(answer)}</td>
<td>${e(r.state)}</td>
<td>${e(r.queries.length)}</td>
<td>${e(m.receipts)}</td>
</tr>`;
  });
  const off = options.traceEnabled
    ? ''
    : '<p class="note" role="status">The message trace is off (TRACE_ENABLED=false): no new message is kept.</p>';
  const empty =
    rows.length === 0
      ? '<p class="note" role="status">No message kept (entries expire after trace.retention_days).</p>'
      : '';
  const older =
    page.next_before === null
      ? ''
      : `<p><a rel="next" href="${e(listHref(paths, feed, page.next_before))}">Older messages</a></p>`;
  const skipped =
    page.skipped > 0
      ? `<p class="note">${e(page.skipped)} entr${page.skipped === 1 ? 'y' : 'ies'} could not be read and are not shown.</p>`
      : '';
  return layout(
    'Messages',
    paths,
    `<h1>Messages</h1>
<p class="note">The newest messages read by ingest, by the time of their newest receipt. Read-only; the message itself is never shown.</p>
${off}
<form method="get" action="${e(paths.list)}">
<label for="feed">Feed</label>
<select id="feed" name="feed">${choices}</select>
<button type="submit">Show</button>
</form>
${empty}
${
  rows.length === 0
    ? ''
    : `<table>
<thead><tr><th>Received</th><th>Feed</th><th>Control id</th><th>Sender (application/facility)</th><th>Type</th><th>Answer</th><th>State</th><th>Queries</th><th>Receipts</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`
}
${skipped}
${older}`,
  );
}

function receiptSection(receipt: ReceiptTrace, index: number, count: number): string {
  const psid = receipt.psid;
  const steps = traceSteps(receipt).map((step) => {
    // The patient by its service id's first characters only (as the board never shows one).
    const text = psid === null ? step.text : step.text.split(psid).join(shortPsid(psid));
    return `<tr data-kind="${e(step.kind)}">
<td class="time">${e(time(step.at))}</td>
<td>${e(step.kind)}</td>
<td class="code">${e(step.code ?? '-')}</td>
<td class="code">${e(step.query ?? '')}</td>
<td>${e(text)}</td>
</tr>`;
  });
  return `<section class="receipt" aria-label="receipt ${index} of ${count}">
<h2>Receipt ${index} of ${count} (partition ${e(receipt.partition)})</h2>
<p>${e(receipt.feed)} ${e(receipt.type ?? '(no type)')} from ${e(receipt.sender.application ?? '-')}/${e(receipt.sender.facility ?? '-')}, received ${e(time(receipt.at))}, state ${e(receipt.state)}${receipt.trace_id === null ? '' : `, trace id ${e(receipt.trace_id)}`}${receipt.has_raw ? '; the message is kept sealed (shown only by <code>trace --raw</code>)' : ''}.</p>
<table>
<thead><tr><th>Time</th><th>Step</th><th>Code</th><th>Query</th><th>What happened</th></tr></thead>
<tbody>
${steps.join('\n')}
</tbody>
</table>
</section>`;
}

/** One message's page: every receipt kept under its control id, oldest first, with its steps. */
export function messageTracePage(trace: MessageTrace, options: { paths: MessagesPaths }): string {
  const { receipts } = trace;
  const body =
    receipts.length === 0
      ? '<p class="note" role="status">Nothing is kept under this control id (never received, expired, or purged).</p>'
      : receipts.map((r, i) => receiptSection(r, i + 1, receipts.length)).join('\n');
  const skipped =
    trace.skipped > 0
      ? `<p class="note">${e(trace.skipped)} entr${trace.skipped === 1 ? 'y' : 'ies'} could not be read and are not shown.</p>`
      : '';
  return layout(
    `Message ${trace.control_id}`,
    options.paths,
    `<h1>Message <code>${e(trace.control_id)}</code></h1>
<p class="note">${e(receipts.length)} receipt(s). Each receipt's steps in order: its answer, its patient, then each query it opened or joined: submission, polls, result and delivery, as far as each went.</p>
${body}
${skipped}`,
  );
}

/** A page that says the request was not understood (a bad filter or page). */
export function messagesErrorPage(message: string, paths: MessagesPaths): string {
  return layout(
    'Messages',
    paths,
    `<h1>Messages</h1><p role="alert">${e(message)}</p><p><a href="${e(paths.list)}">All messages</a></p>`,
  );
}
