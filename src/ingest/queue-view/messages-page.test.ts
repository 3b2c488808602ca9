import { describe, expect, it } from 'vitest';
import type { ReceiptTrace } from '../../trace/message-trace-reader.ts';
import { escapeHtml } from './html-escape.ts';
import { messagesListPage, messageTracePage, shortPsid } from './messages-page.ts';

const PATHS = {
  board: '/admin/queues/',
  list: '/admin/queues/messages',
  logout: '/admin/queues/logout',
};
const PSID = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
const HOSTILE = '"><img src=x onerror=alert(1)>';

const receipt = (over: Partial<ReceiptTrace> = {}): ReceiptTrace => ({
  at: Date.UTC(2026, 10, 20, 8),
  feed: 'hl7v2-mllp',
  sender: { application: HOSTILE, facility: 'MAIN' },
  type: 'ADT^A08',
  answer: { code: 'AA', error: null },
  state: 'queued',
  psid: PSID,
  version: 3,
  queries: [],
  trace_id: null,
  partition: 0,
  has_raw: true,
  ...over,
});

describe('escapeHtml', () => {
  it('escapes what could end text or a quoted attribute', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
    expect(escapeHtml(null)).toBe('');
    expect(escapeHtml(12)).toBe('12');
  });
});

describe('the Messages pages', () => {
  it('a trace page escapes everything read, shows the service id short, and never the raw message', () => {
    const html = messageTracePage(
      { control_id: HOSTILE, receipts: [receipt({ raw: 'SEALED-RAW-TEXT' })], skipped: 1 },
      { paths: PATHS },
    );
    expect(html).not.toContain('<img');
    expect(html).toContain(escapeHtml(HOSTILE));
    expect(html).not.toContain(PSID);
    expect(html).toContain(`patient ${shortPsid(PSID)}, record version 3`);
    expect(html).not.toContain('SEALED-RAW-TEXT');
    expect(html).toContain('kept sealed');
    expect(html).toContain('1 entry could not be read');
    expect([...html.matchAll(/data-kind="(\w+)"/g)].map((m) => m[1])).toEqual([
      'answer',
      'patient',
    ]);
  });

  it('a list page links each row to its trace and pages on with the feed kept', () => {
    const html = messagesListPage(
      {
        messages: [
          {
            control_id: 'A/B 1',
            partition: 0,
            at: 1_700_000_000_000,
            receipts: 2,
            latest: {
              at: 1_700_000_000_000,
              feed: 'json',
              sender: { application: HOSTILE, facility: null },
              type: 'record-update',
              answer: { code: '202', error: null },
              state: 'queued',
              psid: PSID,
              version: 1,
              queries: [{ category: 'END002', seq: 1, coalesced: false }],
              trace_id: null,
              has_raw: false,
            },
          },
        ],
        next_before: 1_700_000_000_000,
        skipped: 0,
      },
      { paths: PATHS, feed: 'json', traceEnabled: false },
    );
    expect(html).toContain('href="/admin/queues/messages/A%2FB%201"');
    expect(html).toContain('href="/admin/queues/messages?feed=json&amp;before=1700000000000"');
    expect(html).toContain('<option value="json" selected>');
    expect(html).toContain('The message trace is off');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<script');
    expect(html).not.toContain(PSID);
  });
});
