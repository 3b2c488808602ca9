import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { ChaosStack } from '../support/chaos-stack.ts';
import { mllpExchange, mllpFrame } from '../support/mllp-client.ts';
import { seededRandom, type Random } from '../../src/simulator/seeded-random.ts';
import {
  drain,
  figuresOf,
  stackFor,
  startTraffic,
  type Check,
  type ScenarioContext,
  type ScenarioOutcome,
} from '../support/scenario.ts';
import { jsonUpdate } from '../support/updates.ts';

/**
 * Keys rewritten while idle, not data: BullMQ's workers' (stalled-job checks, metrics) and the
 * query workers' presence heartbeat (`qworkers`).
 */
const HOUSEKEEPING = /:(stalled-check|metrics|events|meta|qworkers)$/;

/** Every data key with a hash of its DUMP, to tell whether anything changed. */
async function snapshot(admin: Redis): Promise<Map<string, string>> {
  const result = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      if (HOUSEKEEPING.test(key)) continue;
      const dump = await admin.dumpBuffer(key);
      result.set(key, dump === null ? 'gone' : createHash('sha256').update(dump).digest('hex'));
    }
  } while (cursor !== '0');
  return result;
}

function diff(before: Map<string, string>, after: Map<string, string>) {
  const added = [...after.keys()].filter((k) => !before.has(k));
  const removed = [...before.keys()].filter((k) => !after.has(k));
  const changed = [...after.keys()].filter((k) => before.has(k) && before.get(k) !== after.get(k));
  return { added, removed, changed };
}

function bytes(random: Random, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) out[i] = random.int(0, 255);
  return out;
}

/** A snapshot once two taken a second apart agree (the worker's bookkeeping has settled). */
async function settledSnapshot(admin: Redis): Promise<Map<string, string>> {
  let previous = await snapshot(admin);
  for (let i = 0; i < 20; i++) {
    await sleep(1_000);
    const current = await snapshot(admin);
    const d = diff(previous, current);
    if (d.added.length + d.removed.length + d.changed.length === 0) return current;
    previous = current;
  }
  return previous;
}

/** JSON text of an object nested `levels` deep (built as text: JSON.stringify would overflow). */
const deep = (levels: number): string => `${'{"d":'.repeat(levels)}{"leaf":1}${'}'.repeat(levels)}`;

/** A malformed record-update or FHIR body: each kind is refused by construction. */
function malformedBody(
  random: Random,
  i: number,
  run: string,
): {
  kind: string;
  path: string;
  contentType: string;
  body: string | Buffer;
} {
  const valid = jsonUpdate(run, `FUZZ-${run}-${i}`, i, 0);
  const parsed = JSON.parse(valid.body) as Record<string, unknown>;
  const patient = parsed.assembled_patient as { nodes: Record<string, unknown>[] };
  const json = '/v1/record-updates';
  const fhir = '/v1/fhir/Bundle';
  const as = (kind: string, value: unknown, path = json) => ({
    kind,
    path,
    contentType: path === fhir ? 'application/fhir+json' : 'application/json',
    body: JSON.stringify(value),
  });
  switch (i % 16) {
    case 0: // a valid body cut short
      return {
        kind: 'truncated',
        path: json,
        contentType: 'application/json',
        body: valid.body.slice(0, random.int(1, valid.body.length - 2)),
      };
    case 1:
      return {
        kind: 'random bytes',
        path: random.int(0, 1) === 0 ? json : fhir,
        contentType: 'application/json',
        body: bytes(random, random.int(1, 2_000)),
      };
    case 2:
      return as('not an object', random.pick([[], 42, 'text', null, true]));
    case 3:
      return as('patient_id missing', { ...parsed, patient_id: undefined });
    case 4:
      return as('patient_id wrong', {
        ...parsed,
        patient_id: random.pick([42, '', 'x'.repeat(129), ['a'], { id: 'a' }]),
      });
    case 5:
      return as('nodes not a list', { ...parsed, assembled_patient: { ...patient, nodes: {} } });
    case 6:
      return as('node_type unknown', {
        ...parsed,
        assembled_patient: { ...patient, nodes: [{ ...patient.nodes[0], node_type: 'martian' }] },
      });
    case 7:
      return as('identifying key in metadata', {
        ...parsed,
        assembled_patient: {
          ...patient,
          nodes: [{ ...patient.nodes[0], metadata: { ssn: '123-45-6789' } }],
        },
      });
    case 8:
      return as('unknown category', { ...parsed, ccsr_categories: ['XYZ999'] });
    case 9:
      return as('record missing', { ...parsed, assembled_patient: undefined });
    case 10:
      return { ...as('wrong content type', parsed), contentType: 'text/plain' };
    case 11: {
      const body = as('deep metadata', {
        ...parsed,
        assembled_patient: {
          ...patient,
          nodes: [{ ...patient.nodes[0], metadata: '__DEEP__' }],
        },
      });
      const levels = random.pick([200, 1_000, 5_000]);
      return {
        ...body,
        kind: `metadata ${levels} deep`,
        body: (body.body as string).replace('"__DEEP__"', deep(levels)),
      };
    }
    case 12:
      return as('bundle wrong type', { resourceType: 'Bundle', type: 'banana', entry: 'x' }, fhir);
    case 13:
      return as(
        'bundle without patient',
        { resourceType: 'Bundle', type: 'collection', entry: [] },
        fhir,
      );
    case 14:
      return as(
        'not a bundle',
        { resourceType: random.pick(['Patient', 'Banana', 42, null]) },
        fhir,
      );
    default:
      return as('unknown top-level key', { ...parsed, surprise: bytes(random, 8).toString('hex') });
  }
}

async function jsonFuzz(stack: ChaosStack, count: number, run: string, random: Random) {
  const byStatus: Record<string, number> = {};
  const byKind: Record<string, Record<string, number>> = {};
  let next = 0;
  const one = async () => {
    while (next < count) {
      const i = next++;
      const { kind, path, contentType, body } = malformedBody(random, i, run);
      let answer: string;
      try {
        const response = await fetch(`${stack.ingestUrl}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${stack.token}`, 'content-type': contentType },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        await response.body?.cancel();
        answer = String(response.status);
      } catch (err) {
        answer = (err as Error).name === 'TimeoutError' ? 'timeout' : 'network';
      }
      byStatus[answer] = (byStatus[answer] ?? 0) + 1;
      const k = (byKind[kind] ??= {});
      k[answer] = (k[answer] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: 8 }, one));
  // Oversize bodies (above ingest.body_limit_bytes, 5 MiB).
  for (let i = 0; i < 2; i++) {
    try {
      const response = await fetch(`${stack.ingestUrl}/v1/record-updates`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
        body: `{"patient_id":"x","pad":"${'a'.repeat(6 * 1024 * 1024)}"}`,
        signal: AbortSignal.timeout(20_000),
      });
      await response.body?.cancel();
      byStatus[String(response.status)] = (byStatus[String(response.status)] ?? 0) + 1;
      (byKind['6 MiB body'] ??= {})[String(response.status)] =
        (byKind['6 MiB body']?.[String(response.status)] ?? 0) + 1;
    } catch (err) {
      // The ingester answers 413 from the content-length and closes the connection while the
      // client still writes the body: fetch reports that as a network error.
      const answer =
        (err as Error).name === 'TimeoutError' ? 'timeout' : 'connection closed during upload';
      (byKind['6 MiB body'] ??= {})[answer] = (byKind['6 MiB body']?.[answer] ?? 0) + 1;
    }
  }
  return { sent: count + 2, by_status: byStatus, by_kind: byKind };
}

async function mllpFuzz(stack: ChaosStack, quick: boolean, random: Random) {
  const outcomes: Record<string, Record<string, number>> = {};
  const note = (kind: string, outcome: string) => {
    const k = (outcomes[kind] ??= {});
    k[outcome] = (k[outcome] ?? 0) + 1;
  };
  const cases: { kind: string; bytes: () => Buffer; timeoutMs: number }[] = [];
  const garbage = quick ? 60 : 300;
  for (let i = 0; i < garbage; i++) {
    cases.push({
      kind: 'unframed garbage',
      bytes: () => bytes(random, random.int(1, 4_000)),
      timeoutMs: 1_000,
    });
    cases.push({
      kind: 'framed garbage',
      bytes: () => mllpFrame(bytes(random, random.int(1, 4_000))),
      timeoutMs: 3_000,
    });
    cases.push({
      kind: 'broken MSH',
      bytes: () =>
        mllpFrame(
          random.pick([
            'MSH|',
            'MSH|^~\\&|A|B|C|D|x||ADT^A08',
            `MSH|^~\\&|A|B|C|D|20260101||ADT^A08|F${i}|P|2.5.1\rPID|1||`,
            `PID|1||FUZZ^^^X^MR\rMSH|^~\\&|`,
            `MSH|^~\\&|A|B|C|D|20260101||ORU^R01|F${i}|P|2.5.1\rOBX|${'|'.repeat(5_000)}`,
          ]),
        ),
      timeoutMs: 3_000,
    });
  }
  const oversize = quick ? [2] : [2, 2, 50];
  for (const mib of oversize) {
    cases.push({
      kind: `${mib} MiB frame`,
      bytes: () =>
        mllpFrame(
          Buffer.concat([
            Buffer.from('MSH|^~\\&|A|B|C|D|20260101||ADT^A08|BIG|P|2.5.1\rNTE|'),
            Buffer.alloc(mib * 1024 * 1024, 0x61),
          ]),
        ),
      timeoutMs: 20_000,
    });
  }
  let next = 0;
  const one = async () => {
    while (next < cases.length) {
      const c = cases[next++];
      if (!c) return;
      const outcome = await mllpExchange(stack.mllpPort, c.bytes(), c.timeoutMs);
      note(c.kind, outcome.kind === 'ack' ? `ACK ${outcome.code}` : outcome.kind);
    }
  };
  await Promise.all(Array.from({ length: 6 }, one));
  return { sent: cases.length, outcomes };
}

/**
 * Valid traffic first (one update per patient and feed) until delivered; a snapshot of every
 * Redis key; then the malformed JSON/FHIR bodies and MLLP garbage; then the snapshot again (no
 * key added, removed or changed), the process still up, and a second valid update per patient
 * that must be acknowledged and delivered like the first.
 */
export async function fuzz(ctx: ScenarioContext): Promise<ScenarioOutcome> {
  const say = (m: string) => ctx.say(`fuzz: ${m}`);
  const random = seededRandom(8);
  const stack = await stackFor(ctx, 'fuzz');
  try {
    const startedAt = Date.now();
    const plan = {
      feeds: ['json', 'hl7', 'fhir'] as const,
      patientsPerFeed: 3,
      bursts: 1,
      intervalMs: 0,
    };
    const giveUpAt = () => startedAt + 120_000;
    const first = startTraffic(ctx, stack, plan, giveUpAt, 'a');
    await first.done;
    await drain(stack, first.sender.sent, { quietMs: 15_000, maxMs: 45_000 });
    const before = await settledSnapshot(stack.admin);
    const ingestPid = stack.ingest.proc.pid;

    const bodies = ctx.quick ? 400 : 2_000;
    say(`${bodies} malformed JSON/FHIR bodies`);
    const json = await jsonFuzz(stack, bodies, ctx.runId, random);
    say('MLLP garbage and oversize frames');
    const mllp = await mllpFuzz(stack, ctx.quick, random);
    const after = await snapshot(stack.admin);
    const changes = diff(before, after);
    const health = await fetch(`${stack.ingestUrl}/healthz`).then(
      (r) => r.status,
      () => 0,
    );

    say('valid updates after the fuzz');
    const second = startTraffic(ctx, stack, { ...plan, bursts: 2 }, giveUpAt, 'a');
    await second.done;
    // The second round resends seq 0 (answered as duplicates) and adds seq 1.
    const sent = [...first.sender.sent, ...second.sender.sent.filter((s) => s.update.seq === 1)];
    await drain(stack, sent, { quietMs: 15_000, maxMs: 45_000 });
    const figures = await figuresOf(stack, sent, [], startedAt);

    const serverErrors = Object.entries(json.by_status)
      .filter(([status]) => status.startsWith('5'))
      .reduce((sum, [, n]) => sum + n, 0);
    const accepted = Object.entries(json.by_status)
      .filter(([status]) => status.startsWith('2'))
      .reduce((sum, [, n]) => sum + n, 0);
    const mllpAccepted = Object.values(mllp.outcomes).reduce(
      (sum, o) => sum + (o['ACK AA'] ?? 0),
      0,
    );
    const checks: Check[] = [
      {
        name: 'no Redis key added, removed or changed by the fuzz',
        ok: changes.added.length + changes.removed.length + changes.changed.length === 0,
        detail: {
          added: changes.added.length,
          removed: changes.removed.length,
          changed: changes.changed.length,
          examples: [...changes.added, ...changes.removed, ...changes.changed].slice(0, 6),
        },
      },
      {
        name: 'ingest process survived (same pid, /healthz 200)',
        ok: stack.ingest.proc.running && stack.ingest.proc.pid === ingestPid && health === 200,
        detail: { healthz: health },
      },
      { name: 'no malformed body accepted (2xx)', ok: accepted === 0, detail: { accepted } },
      {
        name: 'no malformed body answered 5xx',
        ok: serverErrors === 0,
        detail: { server_errors: serverErrors },
      },
      {
        name: 'no MLLP garbage acknowledged AA',
        ok: mllpAccepted === 0,
        detail: { aa: mllpAccepted },
      },
    ];
    return {
      figures,
      checks,
      details: {
        settings: {
          json_bodies: json.sent,
          mllp_exchanges: mllp.sent,
          redis_keys_compared: before.size,
        },
        json_fuzz: json,
        mllp_fuzz: mllp,
      },
    };
  } finally {
    await stack.close();
  }
}
