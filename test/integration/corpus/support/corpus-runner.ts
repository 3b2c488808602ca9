import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { expect } from 'vitest';
import { loadConfig } from '../../../../src/config/load-config.ts';
import { parseOutboxMember, queryOutboxKey } from '../../../../src/queries/query-outbox.ts';
import { FHIR_JSON, startFhirHarness, type FhirHarness } from '../../fhir/support/fhir-harness.ts';
import {
  TOKEN as HL7_TOKEN,
  sendOne,
  startHl7v2Harness,
  type Hl7v2Harness,
} from '../../hl7v2/support/hl7v2-harness.ts';

/** `test/corpus/`: the public messages and resources, their SOURCES.md and expectations.json. */
export const CORPUS_DIR = fileURLToPath(new URL('../../../corpus/', import.meta.url));

/** The issue-9 features an expectation can depend on. */
export const FEATURES = [
  'identity-rules',
  'charsets',
  'batches',
  'message-types',
  'terminology',
  'fhir-intake',
] as const;

const Channel = z.enum(['mllp', 'http-hl7v2', 'fhir-bundle', 'fhir-notification', 'fhir-put']);
const Ack = z.enum(['AA', 'AE', 'AR']);

const Expect = z
  .object({
    /** MSA-1 of the single ACK (MLLP or HTTP); MSA-2 must be the message's MSH-10. */
    ack: Ack.optional(),
    /** MSA-1 of each ACK of a batch answer, in message order. */
    acks: z.array(Ack).optional(),
    /** ERR-2 (the error location, e.g. `MSH^1^18`) of the single ACK. */
    errLocation: z.string().optional(),
    /** HTTP status of a FHIR request: a number, or `2xx`. */
    http: z.union([z.number().int(), z.literal('2xx')]).optional(),
    /** `cw_hl7v2_messages_total{type,outcome}` counted this message's type with this outcome. */
    outcome: z.enum(['accepted', 'ignored', 'rejected']).optional(),
    /** The message type counted `ignored` (`MSH-9.1^MSH-9.2`). */
    ignoredType: z.string().optional(),
    /** Stored patient records (with a record or clinical field) after the item. */
    patients: z.number().int().nonnegative().optional(),
    /**
     * CCSR categories of the queries opened (the due set): `exact` is the whole set, `include` a
     * subset.
     */
    queries: z
      .object({
        exact: z.array(z.string()).optional(),
        include: z.array(z.string()).optional(),
      })
      .strict()
      .optional(),
    /**
     * Code systems counted by a metric whose name has `unmapped` (matched on letters and digits
     * of its label values, so `icd-9` matches `ICD9CM` and `http://hl7.org/fhir/sid/icd-9-cm`).
     */
    unmapped: z.array(z.string()).optional(),
  })
  .strict();

/**
 * The same file sent another way, asserted in the same entry (one entry per file): over a
 * listener with another default character set (`hl7v2.charset`), or over HTTP with a `charset` in
 * `Content-Type`.
 */
const Variant = z
  .object({
    /** What the variant shows (the test's name). */
    name: z.string().min(1),
    /** @defaultValue the item's channel */
    channel: Channel.optional(),
    /** `hl7v2.charset.*` of the stack (the rest of `hl7v2.charset` stays the default). */
    charset: z
      .object({
        mllp_default: z.string().min(1).optional(),
        http_default: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
    /** `Content-Type` of a `POST /v1/hl7v2` (`text/plain` unless given). */
    contentType: z.string().min(1).optional(),
    expect: Expect,
  })
  .strict();

const Item = z
  .object({
    file: z.string(),
    channel: Channel,
    version: z.string().optional(),
    tags: z.array(z.string()),
    /** Corpus files sent first on the same stack (each must be answered AA / 2xx). */
    before: z.array(z.string()).optional(),
    expect: Expect,
    needs: z.array(z.enum(FEATURES)),
    note: z.string().optional(),
    variants: z.array(Variant).optional(),
  })
  .strict();

export type CorpusItem = z.infer<typeof Item>;
export type CorpusVariant = z.infer<typeof Variant>;

/** `hl7v2.charset` as configured by default (`config/default.yaml`). */
const DEFAULT_CHARSETS = loadConfig({ env: { INGEST_TOKENS: HL7_TOKEN } }).hl7v2.charset;

/** An item as one of its variants sends it (its channel and expectation; `variants` dropped). */
export function asVariant(item: CorpusItem, variant: CorpusVariant): CorpusItem {
  const { variants: _variants, ...rest } = item;
  return { ...rest, channel: variant.channel ?? item.channel, expect: variant.expect };
}

const Expectations = z.object({ $comment: z.string(), items: z.array(Item) }).strict();

export function loadCorpus(): CorpusItem[] {
  const raw: unknown = JSON.parse(readFileSync(`${CORPUS_DIR}expectations.json`, 'utf8'));
  return Expectations.parse(raw).items;
}

/** Every message/resource file under `test/corpus/` (`hl7v2/…`, `fhir/…`). */
export function corpusFiles(): string[] {
  return ['hl7v2', 'fhir'].flatMap((dir) =>
    readdirSync(`${CORPUS_DIR}${dir}`)
      .sort()
      .map((f) => `${dir}/${f}`),
  );
}

export function corpusBytes(file: string): Buffer {
  return readFileSync(`${CORPUS_DIR}${file}`);
}

/**
 * Where a classic R4 rest-hook `PUT {endpoint}/{type}/{id}` goes. The issue names the shape, not
 * the endpoint: the FHIR intake part decides it; adjust here if it chose another one.
 */
/** The classic R4 rest-hook the corpus's full resources are PUT to (`fhir.rest_hooks`). */
const CORPUS_HOOK = 'corpus';

export function fhirPutPath(type: string, id: string): string {
  return `/v1/fhir/rest-hook/${CORPUS_HOOK}/${encodeURIComponent(type)}/${encodeURIComponent(id)}`;
}

/** The segments of an ER7 text (CR, LF or CRLF; a leading BOM dropped). */
function segments(text: string): string[] {
  return text
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\r|\n/)
    .filter((s) => s.length > 0);
}

/** MSH-9.1^MSH-9.2 and MSH-10 of every message in an ER7 text (one, or a batch's). */
export function messagesOf(text: string): { type: string; controlId: string }[] {
  return segments(text)
    .filter((s) => s.startsWith('MSH'))
    .map((s) => {
      const fields = s.split(s[3] ?? '|');
      const [code = '', event = ''] = (fields[8] ?? '').split('^');
      return { type: `${code}^${event}`, controlId: fields[9] ?? '' };
    });
}

/** MSA-1 and MSA-2 of every MSA segment of an answer. */
export function msasOf(answer: string): { code: string; controlId: string }[] {
  return segments(answer)
    .filter((s) => s.startsWith('MSA|'))
    .map((s) => {
      const f = s.split('|');
      return { code: f[1] ?? '', controlId: f[2] ?? '' };
    });
}

/** What one item got back and changed. */
export interface Observed {
  /** The ER7 answer (HL7 channels); undefined when the connection closed without one. */
  answer?: string;
  /** HTTP status (HTTP channels). */
  status?: number;
  /** `type|outcome` → count from `cw_hl7v2_messages_total`. */
  counted: Map<string, number>;
  patients: number;
  categories: string[];
  /** Label values (joined) and count of each series of every metric whose name has `unmapped`. */
  unmapped: { labels: string; value: number }[];
}

type Stack = { kind: 'hl7'; h: Hl7v2Harness } | { kind: 'fhir'; h: FhirHarness };

function isHl7(channel: CorpusItem['channel']): boolean {
  return channel === 'mllp' || channel === 'http-hl7v2';
}

async function send(
  stack: Stack,
  channel: CorpusItem['channel'],
  file: string,
  contentType = 'text/plain',
): Promise<{ answer?: string; status?: number }> {
  const bytes = corpusBytes(file);
  if (channel === 'mllp') {
    if (stack.kind !== 'hl7') throw new Error(`${file}: MLLP needs the HL7 stack`);
    const answer = await sendOne(stack.h.mllp.port, bytes);
    return answer === undefined ? {} : { answer };
  }
  if (channel === 'http-hl7v2') {
    if (stack.kind !== 'hl7') throw new Error(`${file}: HTTP hl7v2 needs the HL7 stack`);
    const res = await stack.h.app.inject({
      method: 'POST',
      url: '/v1/hl7v2',
      headers: { authorization: `Bearer ${HL7_TOKEN}`, 'content-type': contentType },
      payload: bytes,
    });
    return { answer: res.body, status: res.statusCode };
  }
  if (stack.kind !== 'fhir') throw new Error(`${file}: FHIR channels need the FHIR stack`);
  if (channel === 'fhir-put') {
    const resource = JSON.parse(bytes.toString('utf8')) as { resourceType: string; id: string };
    const res = await stack.h.app.inject({
      method: 'PUT',
      url: fhirPutPath(resource.resourceType, resource.id),
      headers: FHIR_JSON,
      payload: bytes,
    });
    return { status: res.statusCode };
  }
  const res = await stack.h.app.inject({
    method: 'POST',
    url: channel === 'fhir-bundle' ? '/v1/fhir/Bundle' : '/v1/fhir/notifications',
    headers: FHIR_JSON,
    payload: bytes,
  });
  return { status: res.statusCode };
}

async function observe(
  stack: Stack,
  sent: { answer?: string; status?: number },
): Promise<Observed> {
  const { h } = stack;
  const redis = h.inspect;
  const counted = new Map<string, number>();
  const metrics = await h.registry.getMetricsAsJSON();
  for (const metric of metrics) {
    if (metric.name !== 'cw_hl7v2_messages_total') continue;
    for (const v of metric.values) {
      counted.set(`${String(v.labels.type)}|${String(v.labels.outcome)}`, v.value);
    }
  }
  const unmapped = metrics
    .filter((m) => m.name.includes('unmapped'))
    .flatMap((m) =>
      m.values.map((v) => ({
        labels: Object.values(v.labels).map(String).join(' '),
        value: v.value,
      })),
    );
  let patients = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${h.prefix}:rec:*`, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const fields = await redis.hkeys(key);
      if (fields.includes('record') || fields.includes('clinical')) patients += 1;
    }
  } while (cursor !== '0');
  const members = await redis.zrange(queryOutboxKey(h.prefix), '0', '-1');
  const categories = [
    ...new Set(members.map((m) => parseOutboxMember(m)?.ccsrCategory ?? `unparsed:${m}`)),
  ].sort();
  return { ...sent, counted, patients, categories, unmapped };
}

/**
 * Sends the item's `before` files and then the item through a fresh stack (the real MLLP server
 * and ingest app on the test Redis, under a private prefix) and reports what it got back and
 * changed. `before` files must be answered AA (HL7) or 2xx (FHIR). With a variant: its channel,
 * listener character sets and `Content-Type`.
 */
export async function runItem(
  item: CorpusItem,
  corpus: CorpusItem[],
  variant?: CorpusVariant,
): Promise<Observed> {
  const channel = variant?.channel ?? item.channel;
  const stack: Stack = isHl7(channel)
    ? {
        kind: 'hl7',
        h: await startHl7v2Harness({
          terminology: true,
          ...(variant?.charset === undefined
            ? {}
            : {
                hl7v2: { charset: { ...DEFAULT_CHARSETS, ...variant.charset } },
              }),
        }),
      }
    : {
        kind: 'fhir',
        h: await startFhirHarness({
          terminology: true,
          restHooks: [
            { name: CORPUS_HOOK, criteria: 'Condition?', first_lookback_s: 86_400, overlap_s: 300 },
          ],
        }),
      };
  try {
    for (const file of item.before ?? []) {
      const channel = corpus.find((other) => other.file === file)?.channel;
      if (channel === undefined)
        throw new Error(`${item.file}: "before" file ${file} has no entry`);
      const got = await send(stack, channel, file);
      const ok =
        stack.kind === 'hl7'
          ? msasOf(got.answer ?? '').every((m) => m.code === 'AA') &&
            msasOf(got.answer ?? '').length > 0
          : got.status !== undefined && got.status >= 200 && got.status < 300;
      if (!ok) {
        throw new Error(
          `${item.file}: its "before" file ${file} was not accepted (${got.status ?? ''} ${msasOf(
            got.answer ?? '',
          )
            .map((m) => m.code)
            .join(',')})`,
        );
      }
    }
    const sent = await send(stack, channel, item.file, variant?.contentType);
    return await observe(stack, sent);
  } finally {
    await stack.h.close();
  }
}

/** Asserts everything `item.expect` says against what the item got back and changed. */
export function assertExpected(item: CorpusItem, observed: Observed): void {
  const e = item.expect;
  const sent = isHl7(item.channel) ? messagesOf(corpusBytes(item.file).toString('utf8')) : [];
  if (item.channel === 'http-hl7v2') expect(observed.status, 'HTTP status').toBe(200);
  if (e.ack !== undefined || e.acks !== undefined) {
    expect(observed.answer, 'an answer arrived').toBeDefined();
    const msas = msasOf(observed.answer ?? '');
    const codes = e.acks ?? [e.ack];
    expect(
      msas.map((m) => m.code),
      'MSA-1 of each ACK',
    ).toEqual(codes);
    expect(
      msas.map((m) => m.controlId),
      'MSA-2 = MSH-10 of each message',
    ).toEqual(sent.map((m) => m.controlId));
  }
  if (e.errLocation !== undefined) {
    const err = segments(observed.answer ?? '').find((s) => s.startsWith('ERR|'));
    expect(err?.split('|')[2], 'ERR-2 of the ACK').toBe(e.errLocation);
  }
  if (e.http !== undefined) {
    if (e.http === '2xx') {
      expect(observed.status, 'HTTP status 2xx').toBeGreaterThanOrEqual(200);
      expect(observed.status, 'HTTP status 2xx').toBeLessThan(300);
    } else {
      expect(observed.status, 'HTTP status').toBe(e.http);
    }
  }
  if (e.outcome !== undefined) {
    for (const type of new Set(sent.map((m) => m.type))) {
      expect(
        observed.counted.get(`${type}|${e.outcome}`) ?? 0,
        `cw_hl7v2_messages_total{type="${type}",outcome="${e.outcome}"}`,
      ).toBeGreaterThan(0);
    }
  }
  if (e.ignoredType !== undefined) {
    expect(
      observed.counted.get(`${e.ignoredType}|ignored`) ?? 0,
      `${e.ignoredType} counted ignored`,
    ).toBeGreaterThan(0);
  }
  if (e.patients !== undefined) expect(observed.patients, 'stored patients').toBe(e.patients);
  if (e.queries?.exact !== undefined) {
    expect(observed.categories, 'CCSR categories of the queries opened').toEqual(
      [...e.queries.exact].sort(),
    );
  }
  if (e.queries?.include !== undefined) {
    expect(observed.categories, 'CCSR categories of the queries opened').toEqual(
      expect.arrayContaining(e.queries.include),
    );
  }
  // Label spellings differ (`icd-9-cm`, `ICD9CM`, the system URI): compare letters and digits.
  const squash = (text: string): string => text.toLowerCase().replace(/[^a-z0-9]/g, '');
  for (const system of e.unmapped ?? []) {
    const total = observed.unmapped
      .filter((u) => squash(u.labels).includes(squash(system)))
      .reduce((sum, u) => sum + u.value, 0);
    expect(total, `unmapped problems counted for ${system}`).toBeGreaterThan(0);
  }
}
