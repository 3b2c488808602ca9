import type { Hl7v2Config } from '../../config/config-schema.ts';
import type { ClinicalChange, ReportedItem } from '../../records/clinical-change.ts';
import { CODE_SYSTEMS, type PatientIdentityFacets } from '../../records/clinical-record.ts';
import {
  component,
  hl7DateToIso,
  rawField,
  repetitions,
  segmentsNamed,
  value,
  type Er7Message,
  type Segment,
} from './er7.ts';
import { describeRules, patientKeyOfPid, priorKeyOfMrg } from './patient-id-rules.ts';
import { ConcordanceError } from '../../errors/concordance-error.ts';

/** A message the sender must fix (AE): nothing is changed. */
export class Hl7v2RejectError extends ConcordanceError {
  static readonly code = 'ERR_HL7V2_REJECTED';
  readonly code = Hl7v2RejectError.code;
  override readonly name = 'Hl7v2RejectError';
  /** HL7 table 0357: 101 required field missing, 102 data type error, 100 segment sequence error… */
  readonly errorCode: string;
  readonly location: string;

  constructor(message: string, errorCode: string, location: string) {
    super(message);
    this.errorCode = errorCode;
    this.location = location;
  }
}

export interface MessageHeader {
  /** MSH-9.1 and MSH-9.2. */
  type: string;
  trigger: string;
  /** MSH-10. */
  controlId: string;
  /** MSH-3.1. */
  sendingApplication: string;
  /** MSH-4.1. */
  sendingFacility: string;
}

export type MappedMessage =
  | { action: 'apply'; localId: string; changes: ClinicalChange[]; kinds: string[] }
  | { action: 'merge'; merges: { survivingLocalId: string; priorLocalId: string }[] }
  /** A23/A29: the patient's record and presets go, as an admin purge does. */
  | { action: 'delete'; localId: string }
  /** An inbound ACK (MSH-9 = ACK): not itself acknowledged. */
  | { action: 'no_reply' }
  | { action: 'ignore' };

/** ADT events that update the patient: demographics (PID), diagnoses (DG1), allergies (AL1). */
const ADT_UPDATES = [
  'A01',
  'A02',
  'A03',
  'A04',
  'A05',
  'A06',
  'A07',
  'A08',
  'A11',
  'A12',
  'A13',
  'A28',
  'A31',
] as const;
/** Merges and identifier changes: PID names the surviving id, MRG the retired one. */
const ADT_MERGES = ['A18', 'A34', 'A40', 'A47'] as const;
/** Deletes: the patient's record and presets go. */
const ADT_DELETES = ['A23', 'A29'] as const;
/** Orders and billing messages whose DG1 segments carry diagnoses (often the site's ICD-10-CM). */
const DG1_CARRIERS = ['ORM^O01', 'OML^O21', 'BAR^P01', 'BAR^P05', 'DFT^P03'] as const;

/** The (type, trigger) pairs this ingester acts on; every other type is AA and counted ignored. */
export const HANDLED_TYPES: ReadonlySet<string> = new Set([
  ...[...ADT_UPDATES, ...ADT_MERGES, ...ADT_DELETES].map((t) => `ADT^${t}`),
  ...DG1_CARRIERS,
  'ORU^R01',
  'PPR^PC1',
  'PPR^PC2',
  'PPR^PC3',
  'VXU^V04',
]);

/**
 * HL7 coding-system ids (CWE.3; HL7 table 0396, their older spellings, and the OIDs some engines
 * send) → our code system name. Matched without case, spaces or hyphens (`ICD-10-CM` = `ICD10CM`).
 */
const SYSTEMS: Readonly<Record<string, keyof typeof CODE_SYSTEMS>> = {
  I10: 'icd10cm',
  I10C: 'icd10cm',
  ICD10: 'icd10cm',
  ICD10CM: 'icd10cm',
  '2.16.840.1.113883.6.90': 'icd10cm',
  I9: 'icd9cm',
  I9C: 'icd9cm',
  I9CDX: 'icd9cm',
  ICD9: 'icd9cm',
  ICD9CM: 'icd9cm',
  '2.16.840.1.113883.6.103': 'icd9cm',
  SCT: 'snomed',
  SNM: 'snomed',
  SNM3: 'snomed',
  SNOMED: 'snomed',
  SNOMEDCT: 'snomed',
  '2.16.840.1.113883.6.96': 'snomed',
  LN: 'loinc',
  LOINC: 'loinc',
  '2.16.840.1.113883.6.1': 'loinc',
  RXNORM: 'rxnorm',
  RXN: 'rxnorm',
  '2.16.840.1.113883.6.88': 'rxnorm',
  CVX: 'cvx',
  '2.16.840.1.113883.12.292': 'cvx',
};

/** Our code system name for an HL7 coding-system id, or undefined when we do not know it. */
export function codeSystemOf(hl7System: string): keyof typeof CODE_SYSTEMS | undefined {
  const key = hl7System
    .trim()
    .toUpperCase()
    .replace(/^URN:OID:/, '')
    .replace(/[\s_-]/g, '');
  return SYSTEMS[key];
}

export function headerOf(message: Er7Message): MessageHeader {
  const msh = message.segments[0];
  const d = message.delimiters;
  return {
    type: value(msh, 9, d, 1),
    trigger: value(msh, 9, d, 2),
    controlId: value(msh, 10, d),
    sendingApplication: value(msh, 3, d, 1),
    sendingFacility: value(msh, 4, d, 1),
  };
}

interface Coded {
  system: keyof typeof CODE_SYSTEMS;
  code: string;
  display?: string;
}

/** A CWE/CE repetition as one of our codings (primary triplet, then the alternate one). */
function coded(rawRep: string, message: Er7Message, fallbackSystem = ''): Coded | undefined {
  const d = message.delimiters;
  for (const start of [1, 4]) {
    const code = component(rawRep, start, d);
    const sys = component(rawRep, start + 2, d) || (start === 1 ? fallbackSystem : '');
    const system = codeSystemOf(sys);
    if (code !== '' && system !== undefined) {
      const display = component(rawRep, start + 1, d);
      return { system, code, ...(display === '' ? {} : { display }) };
    }
  }
  return undefined;
}

function coding(c: Coded) {
  return {
    system: CODE_SYSTEMS[c.system],
    code: c.code,
    ...(c.display ? { display: c.display } : {}),
  };
}

/**
 * A diagnosis or problem code (DG1-3, PRB-3): as {@link coded}, and else a code whose CWE-3 names
 * a system we do not know (a local one, `99…`, ICD-10-GM's `icd10gm2023`…) kept with that system
 * as sent. The terminology step then maps it (`terminology.csv_file`) or counts it unmapped:
 * dropping it would lose the diagnosis without a trace. `key` names it in the record.
 */
function problemCoded(
  rawRep: string,
  message: Er7Message,
  fallbackSystem = '',
): { key: string; coding: ReportedItem['codings'][number] } | undefined {
  const known = coded(rawRep, message, fallbackSystem);
  if (known !== undefined) return { key: `${known.system}:${known.code}`, coding: coding(known) };
  const d = message.delimiters;
  for (const start of [1, 4]) {
    const code = component(rawRep, start, d).trim();
    const system = component(rawRep, start + 2, d).trim();
    if (code !== '' && system !== '') {
      const display = component(rawRep, start + 1, d);
      return {
        key: `${system}:${code}`,
        coding: { system, code, ...(display === '' ? {} : { display }) },
      };
    }
  }
  return undefined;
}

function requireLocalId(
  pid: Segment | undefined,
  message: Er7Message,
  config: Hl7v2Config,
): string {
  if (pid === undefined) throw new Hl7v2RejectError('no PID segment', '100', 'PID');
  const id = patientKeyOfPid(pid, message.delimiters, config.patient_id);
  if (id === undefined) {
    throw new Hl7v2RejectError(
      `PID-3 holds no identifier the patient id rules accept (${describeRules(config.patient_id)})`,
      '101',
      'PID^1^3',
    );
  }
  return id;
}

function nonEmpty<T>(values: T[]): T[] {
  return values.filter((v) => v !== '' && v !== undefined);
}

/** PID demographics and identifiers as identity facets. */
export function facetsOf(pid: Segment, message: Er7Message): Partial<PatientIdentityFacets> {
  const d = message.delimiters;
  const reps = (n: number) => repetitions(rawField(pid, n), d);
  const comps = (rep: string, order: number[]) =>
    order.map((c) => component(rep, c, d)).filter((v) => v !== '');
  const names = reps(5)
    .map((rep) => {
      const family = component(rep, 1, d);
      return [
        component(rep, 5, d),
        component(rep, 2, d),
        component(rep, 3, d),
        family,
        component(rep, 4, d),
      ]
        .filter((v) => v !== '')
        .join(' ');
    })
    .filter((v) => v !== '');
  // PID-2 and PID-4 too: old versions' patient ids (the identity rules' fallbacks), so that the
  // record always holds the id a message was filed under (and the last check refuses it).
  const identifiers = nonEmpty([
    ...reps(3).map((rep) => component(rep, 1, d)),
    ...reps(2).map((rep) => component(rep, 1, d)),
    ...reps(4).map((rep) => component(rep, 1, d)),
    ...reps(18).map((rep) => component(rep, 1, d)),
    ...reps(19).map((rep) => component(rep, 1, d)),
  ]);
  const phones: string[] = [];
  const emails: string[] = [];
  for (const rep of [...reps(13), ...reps(14)]) {
    const number = component(rep, 1, d) || comps(rep, [6, 7, 8]).join(' ');
    if (number !== '') phones.push(number);
    const email = component(rep, 4, d);
    if (email !== '') emails.push(email);
  }
  const addresses = reps(11)
    .map((rep) => comps(rep, [1, 2, 3, 4, 5, 6]).join(', '))
    .filter((v) => v !== '');
  const race = nonEmpty(reps(10).map((rep) => component(rep, 1, d)));
  const birthDate = hl7DateToIso(value(pid, 7, d))?.slice(0, 10);
  const gender = value(pid, 8, d);
  return {
    names,
    identifiers,
    phones,
    emails,
    addresses,
    race,
    ...(birthDate === undefined ? {} : { birthDate }),
    ...(gender === '' ? {} : { gender }),
  };
}

function dg1Items(message: Er7Message, segments: Segment[]): ReportedItem[] {
  const d = message.delimiters;
  const items: ReportedItem[] = [];
  for (const dg1 of segments) {
    const rep = repetitions(rawField(dg1, 3), d)[0] ?? '';
    const c = problemCoded(rep, message, value(dg1, 2, d));
    if (c === undefined) continue;
    const effectiveAt = hl7DateToIso(value(dg1, 5, d));
    items.push({
      key: `hl7:dg1:${c.key}`,
      kind: 'condition',
      codings: [c.coding],
      status: 'active',
      problemList: false,
      ...(effectiveAt === undefined ? {} : { effectiveAt }),
      source: 'hl7v2',
    });
  }
  return items;
}

function al1Items(message: Er7Message): ReportedItem[] {
  const d = message.delimiters;
  const items: ReportedItem[] = [];
  for (const al1 of segmentsNamed(message, 'AL1')) {
    const rep = repetitions(rawField(al1, 3), d)[0] ?? '';
    const c = coded(rep, message);
    if (c === undefined) continue;
    const effectiveAt = hl7DateToIso(value(al1, 6, d));
    items.push({
      key: `hl7:al1:${c.system}:${c.code}`,
      kind: 'allergy',
      codings: [coding(c)],
      status: 'active',
      ...(effectiveAt === undefined ? {} : { effectiveAt }),
      source: 'hl7v2',
    });
  }
  return items;
}

const OBX_STATUS: Readonly<Record<string, string>> = {
  F: 'final',
  C: 'corrected',
  P: 'preliminary',
  R: 'preliminary',
  S: 'preliminary',
  A: 'amended',
};

/** OBX results (LOINC only): one change per code, the newest (then the last) result winning. */
function obxChanges(message: Er7Message): ClinicalChange[] {
  const d = message.delimiters;
  const byKey = new Map<string, { change: ClinicalChange; at: string }>();
  const obr = segmentsNamed(message, 'OBR')[0];
  const orderedAt = hl7DateToIso(value(obr, 7, d));
  for (const obx of segmentsNamed(message, 'OBX')) {
    const c = coded(repetitions(rawField(obx, 3), d)[0] ?? '', message);
    if (c === undefined || c.system !== 'loinc') continue;
    const key = `hl7:obx:${c.code}`;
    const status = value(obx, 11, d).toUpperCase();
    const effectiveAt = hl7DateToIso(value(obx, 14, d)) ?? orderedAt;
    let change: ClinicalChange;
    if (status === 'D' || status === 'W') {
      change = { type: 'remove', key };
    } else {
      const type = value(obx, 2, d).toUpperCase();
      const first = repetitions(rawField(obx, 5), d)[0] ?? '';
      let result: number | string | undefined;
      if (type === 'NM' || type === 'SN') {
        const text =
          type === 'SN' && component(first, 1, d) === ''
            ? component(first, 2, d)
            : component(first, 1, d);
        const n = /^[+-]?(\d+\.?\d*|\.\d+)$/.test(text) ? Number(text) : Number.NaN;
        if (Number.isFinite(n) && (type === 'NM' || component(first, 3, d) === '')) result = n;
      } else if (type === 'CE' || type === 'CWE' || type === 'CNE') {
        // The code, as FHIR's valueCodeableConcept gives it: the text beside it is a display,
        // and displays are never sent (see strip-free-text.ts).
        const code = component(first, 1, d);
        if (code !== '') result = code;
      }
      // Free text (ST, TX, FT), pointers and encapsulated data are never kept. A result with no
      // value at all (pending, status I) records nothing.
      if (result === undefined && component(first, 1, d) === '') continue;
      const unit = value(obx, 6, d, 1);
      const referenceRange = value(obx, 7, d);
      const interpretation = repetitions(rawField(obx, 8), d)
        .map((rep) => component(rep, 1, d))
        .filter((v) => v !== '')
        .join(',');
      const mapped = OBX_STATUS[status];
      change = {
        type: 'upsert',
        item: {
          key,
          kind: 'observation',
          codings: [coding(c)],
          ...(mapped === undefined ? {} : { status: mapped }),
          ...(result === undefined ? {} : { value: result }),
          ...(unit === '' ? {} : { unit }),
          ...(referenceRange === '' ? {} : { referenceRange }),
          ...(interpretation === '' ? {} : { interpretation }),
          ...(effectiveAt === undefined ? {} : { effectiveAt }),
          source: 'hl7v2',
        },
      };
    }
    const at = effectiveAt ?? '';
    const prior = byKey.get(key);
    if (prior === undefined || at >= prior.at) byKey.set(key, { change, at });
  }
  return [...byKey.values()].map((e) => e.change);
}

function prbChanges(message: Er7Message, trigger: string): ClinicalChange[] {
  const d = message.delimiters;
  const changes: ClinicalChange[] = [];
  for (const prb of segmentsNamed(message, 'PRB')) {
    const rep = repetitions(rawField(prb, 3), d)[0] ?? '';
    const instance = value(prb, 4, d);
    const code = component(rep, 1, d);
    const id = instance || code;
    if (id === '') throw new Hl7v2RejectError('PRB has neither PRB-3 nor PRB-4', '101', 'PRB^1^3');
    const key = `hl7:problem:${id}`;
    const action = value(prb, 1, d).toUpperCase();
    if (trigger === 'PC3' || action === 'DE') {
      changes.push({ type: 'remove', key });
      continue;
    }
    const c = problemCoded(rep, message);
    if (c === undefined) continue;
    // PRB-14 (life cycle status); v2.3.1 feeds often put it in PRB-13 (confirmation status).
    const status = (
      value(prb, 14, d, 1) ||
      value(prb, 14, d, 2) ||
      value(prb, 13, d, 1) ||
      value(prb, 13, d, 2)
    ).toLowerCase();
    const effectiveAt = hl7DateToIso(value(prb, 7, d));
    changes.push({
      type: 'upsert',
      item: {
        key,
        kind: 'condition',
        codings: [c.coding],
        ...(status === '' ? {} : { status }),
        problemList: true,
        ...(effectiveAt === undefined ? {} : { effectiveAt }),
        source: 'hl7v2',
      },
    });
  }
  return changes;
}

/** RXA-20 completion status → the FHIR Immunization status. */
const RXA_STATUS: Readonly<Record<string, string>> = {
  CP: 'completed',
  PA: 'completed',
  RE: 'not-done',
  NA: 'not-done',
};

/**
 * VXU RXA segments → immunizations (`hl7:rxa:<system>:<code>:<RXA-3 date>`: the same vaccine given
 * on two days is two items). RXA-21 `D` removes it; uncoded vaccines (no known system) are skipped.
 */
function rxaChanges(message: Er7Message): ClinicalChange[] {
  const d = message.delimiters;
  const changes: ClinicalChange[] = [];
  for (const rxa of segmentsNamed(message, 'RXA')) {
    const c = coded(repetitions(rawField(rxa, 5), d)[0] ?? '', message);
    if (c === undefined) continue;
    const effectiveAt = hl7DateToIso(value(rxa, 3, d));
    const key = `hl7:rxa:${c.system}:${c.code}:${effectiveAt?.slice(0, 10) ?? ''}`;
    if (value(rxa, 21, d).toUpperCase() === 'D') {
      changes.push({ type: 'remove', key });
      continue;
    }
    const status = RXA_STATUS[value(rxa, 20, d).toUpperCase()] ?? 'completed';
    changes.push({
      type: 'upsert',
      item: {
        key,
        kind: 'immunization',
        codings: [coding(c)],
        status,
        ...(effectiveAt === undefined ? {} : { effectiveAt }),
        source: 'hl7v2',
      },
    });
  }
  return changes;
}

/** The merges of an A18/A34/A40/A47: one per PID/MRG pair (PID the survivor, MRG the retired id). */
function mergesOf(message: Er7Message, config: Hl7v2Config): MappedMessage {
  const merges: { survivingLocalId: string; priorLocalId: string }[] = [];
  let pid: Segment | undefined;
  for (const segment of message.segments) {
    if (segment.name === 'PID') pid = segment;
    if (segment.name !== 'MRG') continue;
    const survivingLocalId = requireLocalId(pid, message, config);
    const priorLocalId = priorKeyOfMrg(segment, message.delimiters, config.patient_id);
    if (priorLocalId === undefined) {
      throw new Hl7v2RejectError(
        `MRG-1 holds no identifier the patient id rules accept (${describeRules(config.patient_id)})`,
        '101',
        'MRG^1^1',
      );
    }
    if (priorLocalId !== survivingLocalId) merges.push({ survivingLocalId, priorLocalId });
  }
  if (!message.segments.some((s) => s.name === 'MRG')) {
    throw new Hl7v2RejectError('no MRG segment', '100', 'MRG');
  }
  return { action: 'merge', merges };
}

/**
 * What a parsed message asks for. Throws {@link Hl7v2RejectError} for a message the sender must fix.
 */
export function mapMessage(message: Er7Message, config: Hl7v2Config): MappedMessage {
  const { type, trigger } = headerOf(message);
  const name = `${type}^${trigger}`;
  // An acknowledgement (an engine that answers our ACKs, or a misrouted reply) is never answered:
  // answering it would start an ACK loop between the two ends.
  if (type === 'ACK') return { action: 'no_reply' };
  if (config.ignored_types.includes(type) || config.ignored_types.includes(name)) {
    return { action: 'ignore' };
  }
  if (!HANDLED_TYPES.has(name)) return { action: 'ignore' };

  if (type === 'ADT' && (ADT_MERGES as readonly string[]).includes(trigger)) {
    return mergesOf(message, config);
  }
  const pid = segmentsNamed(message, 'PID')[0];
  const localId = requireLocalId(pid, message, config);
  if (type === 'ADT' && (ADT_DELETES as readonly string[]).includes(trigger)) {
    return { action: 'delete', localId };
  }
  // Every message's PID describes the patient: an ORU or PPR may be the first message about them,
  // and without a birth date no record can be assembled.
  const changes: ClinicalChange[] =
    pid === undefined ? [] : [{ type: 'patient', facets: facetsOf(pid, message) }];
  const kinds = new Set<string>();
  if (type === 'ADT') kinds.add('Patient');
  if (type === 'ADT' || (DG1_CARRIERS as readonly string[]).includes(name)) {
    const conditions = dg1Items(message, segmentsNamed(message, 'DG1'));
    const allergies = type === 'ADT' ? al1Items(message) : [];
    changes.push(
      ...[...conditions, ...allergies].map((item) => ({ type: 'upsert' as const, item })),
    );
    if (conditions.length > 0) kinds.add('Condition');
    if (allergies.length > 0) kinds.add('AllergyIntolerance');
  } else if (type === 'ORU') {
    const results = obxChanges(message);
    changes.push(...results);
    if (results.length > 0) kinds.add('Observation');
  } else if (type === 'PPR') {
    const problems = prbChanges(message, trigger);
    changes.push(...problems);
    if (problems.length > 0) kinds.add('Condition');
  } else if (type === 'VXU') {
    const immunizations = rxaChanges(message);
    changes.push(...immunizations);
    if (immunizations.length > 0) kinds.add('Immunization');
  }
  return { action: 'apply', localId, changes, kinds: [...kinds] };
}
