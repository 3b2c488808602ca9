/**
 * What the cryptography of one query and of one update costs, in CPU µs per operation: each
 * AES-256-GCM seal/open, HMAC and webhook signature the worker and ingest do, timed N times with
 * `process.cpuUsage()` (only the crypto calls: no Redis, no HTTP). Prints one JSON line.
 *
 *   node bench/crypto-cost.ts [N] [--root DIR]
 *
 * N is 100000 by default. `--root` times the code of another checkout (its `src/`), e.g. the main
 * branch's, with the same inputs: only the functions and classes both have are called.
 */
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { benchRecord } from './support/fixtures.ts';
// Types only: the code itself is loaded from the checkout timed (`--root`).
import type * as OutboundEventModule from '../src/delivery/outbound-event.ts';
import type * as OutboundSealModule from '../src/delivery/outbound-seal.ts';
import type * as WebhookSignerModule from '../src/delivery/webhook-signer.ts';
import type * as CrosswalkKeysModule from '../src/identity/crosswalk-keys.ts';
import type * as PatientReferenceModule from '../src/privacy/patient-reference.ts';
import type * as RecordStoreModule from '../src/records/record-store.ts';

const args = process.argv.slice(2);
const rootAt = args.indexOf('--root');
const root = rootAt === -1 ? new URL('..', import.meta.url) : pathToFileURL(`${args[rootAt + 1]}/`);
const positional = rootAt === -1 ? args : args.filter((_, i) => i !== rootAt && i !== rootAt + 1);
const count = Number(positional[0] ?? 100_000);

const load = <T>(path: string) => import(new URL(path, root).href) as Promise<T>;
const { deriveCrosswalkKeys } = await load<typeof CrosswalkKeysModule>(
  'src/identity/crosswalk-keys.ts',
);
const { outboundAesKey } = await load<typeof OutboundSealModule>('src/delivery/outbound-seal.ts');
const { sealOutboundEvent } = await load<typeof OutboundEventModule>(
  'src/delivery/outbound-event.ts',
);
const { WebhookSigner } = await load<typeof WebhookSignerModule>('src/delivery/webhook-signer.ts');
const { RecordStore } = await load<typeof RecordStoreModule>('src/records/record-store.ts');
const { auditPatientRef } = await load<typeof PatientReferenceModule>(
  'src/privacy/patient-reference.ts',
);

// Fixed, made-up secrets and ids: the same inputs for every checkout.
const bytes = (step: number) =>
  Buffer.from(Array.from({ length: 32 }, (_, i) => (i * step + 5) & 0xff)).toString('base64');
const keys = deriveCrosswalkKeys(bytes(37));
const outboundKey = outboundAesKey(bytes(53));
const signer = new WebhookSigner(`whsec_${bytes(29)}`);
// Never connects: the record store's sealing and hashing do not touch Redis.
const redis = new Redis({ lazyConnect: true });
const records = new RecordStore({ redis, prefix: '{cwbench-crypto}', keys });

const psid = '4b7e2c1a-0000-4000-8000-000000000001';
const localId = 'MRN-0000042';
const record = benchRecord(42);
const sealedRecord = records.sealRecord(psid, record);
const sealedLocalId = keys.seal(localId, `xw:${psid}`);
const event = {
  id: '9d3c1f5e-2b4a-4c6d-8e7f-0a1b2c3d4e5f',
  type: 'concordance.completed' as const,
  created_at: '2026-11-02T08:00:00.000Z',
  patient_id: localId,
  patient_service_id: psid,
  ccsr_category: 'END002',
  record_version: 3,
  triggered_by: { event_ids: ['e1', 'e2'], count: 2, first_update_at: null, last_update_at: null },
  remote_job_id: 'job-1',
  status: 'completed' as const,
  concordance: { concordant: true, score: 0.92 },
  error: null,
  changed: true,
};
const sealedEventId = keys.seal(localId, `evt:${event.id}`);
const at = new Date('2026-11-02T08:00:00.000Z');

/** CPU µs per call of `op`, after a warm-up. */
function cost(op: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(count, 5_000); i++) op(i);
  const start = process.cpuUsage();
  for (let i = 0; i < count; i++) op(i);
  const used = process.cpuUsage(start);
  return round((used.user + used.system) / count);
}

function round(us: number): number {
  return Math.round(us * 100) / 100;
}

const perQuery = {
  /** RecordStore.get: the stored record opened (`rec:` context). */
  record_open: cost(() => keys.open(sealedRecord, `rec:${psid}`)),
  /** Crosswalk.localIdOf (twice per query: the payload, the result event). */
  local_id_open: cost(() => keys.open(sealedLocalId, `xw:${psid}`)),
  /** Crosswalk.opaqueFhirId, per FHIR reference in the record: an HMAC and a seal. */
  opaque_fhir_id: cost((i) => [
    keys.lookup(`${psid}|Condition/c-${i}`),
    keys.seal(`Condition/c-${i}`, `fhir:${psid}`),
  ]),
  /** OutboundQueueChannel.deliver: patient_id sealed under OUTBOUND_KEY. */
  outbound_seal: cost(() => sealOutboundEvent(event, outboundKey)),
  /** WebhookDeliveryStore: the waiting event's patient_id sealed, then opened before sending. */
  stored_event_seal: cost(() => keys.seal(localId, `evt:${event.id}`)),
  stored_event_open: cost(() => keys.open(sealedEventId, `evt:${event.id}`)),
  /** WebhookSigner.sign, per attempt (body and Standard Webhooks signature). */
  webhook_sign: cost(() => signer.sign(event, at)),
};
const perUpdate = {
  /** Crosswalk.find / plan: the lookup HMAC of the local id. */
  lookup_hmac: cost((i) => keys.lookup(`MRN-${i}`)),
  /** Crosswalk.plan: the local id sealed for a new service id. */
  local_id_seal: cost(() => keys.seal(localId, `xw:${psid}`)),
  /** RecordStore.sealRecord (JSON + seal). */
  record_seal: cost(() => records.sealRecord(psid, record)),
  /** RecordStore.contentHmac (normalized content + HMAC). */
  content_hmac: cost(() => records.contentHmac(psid, record)),
  /** auditPatientRef (per audited admin action). */
  audit_ref: cost((i) => auditPatientRef(keys, `MRN-${i}`)),
};
redis.disconnect();

process.stdout.write(
  `${JSON.stringify({
    root: root.pathname,
    node: process.version,
    n: count,
    us_per_op: { per_query: perQuery, per_update: perUpdate },
    // The four AES-GCM operations of a query delivered to the outbound queue.
    us_per_query_outbound: round(
      perQuery.record_open + 2 * perQuery.local_id_open + perQuery.outbound_seal,
    ),
  })}\n`,
);
