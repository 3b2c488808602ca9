/**
 * The codes Prevent's payload is built from: LOINC codes of biomarkers with the one UCUM unit each
 * is sent in (and the units converted to it), and of the social-history and questionnaire items
 * (smoking, alcohol, physical activity). Facts, not code: see docs/prevent.md for where each
 * comes from. Everything else of the record stays home.
 */

export const LOINC = 'http://loinc.org';
export const UCUM = 'http://unitsofmeasure.org';
export const SNOMED = 'http://snomed.info/sct';

/** Converts a value given in another unit to the biomarker's own. */
type Conversion = (value: number) => number;

export interface Biomarker {
  /** The key under `patient_biomarkers` (ours, fixed: never text of the record). */
  name: string;
  /** LOINC codes that measure it; the first is the most common. */
  codes: readonly string[];
  /** The UCUM code it is sent in. */
  unit: string;
  /** Other UCUM units it may come in, and how each converts to `unit`. */
  from?: Readonly<Record<string, Conversion>>;
}

const per =
  (factor: number): Conversion =>
  (value) =>
    value * factor;

/** mmol/L to mg/dL: the molar mass in g/mol divided by 10. */
const glucoseMgDl = per(18.016); // C6H12O6, 180.16 g/mol
const cholesterolMgDl = per(38.67); // C27H46O, 386.65 g/mol
const triglyceridesMgDl = per(88.57); // as triolein, 885.7 g/mol

/** A blood chemistry sent in mg/dL, converted from mmol/L by its molar mass. */
const massPerVolume = (name: string, codes: string[], fromMolar: Conversion): Biomarker => ({
  name,
  codes,
  unit: 'mg/dL',
  from: { 'mmol/L': fromMolar },
});

export const BIOMARKERS: readonly Biomarker[] = [
  { name: 'bmi', codes: ['39156-5'], unit: 'kg/m2' },
  {
    name: 'body_weight',
    codes: ['29463-7', '3141-9'],
    unit: 'kg',
    from: { '[lb_av]': per(0.45359237), g: per(0.001) },
  },
  {
    name: 'body_height',
    codes: ['8302-2', '8306-3'],
    unit: 'cm',
    from: { '[in_i]': per(2.54), m: per(100) },
  },
  { name: 'waist_circumference', codes: ['8280-0'], unit: 'cm', from: { '[in_i]': per(2.54) } },
  { name: 'systolic_blood_pressure', codes: ['8480-6'], unit: 'mm[Hg]' },
  { name: 'diastolic_blood_pressure', codes: ['8462-4'], unit: 'mm[Hg]' },
  { name: 'heart_rate', codes: ['8867-4'], unit: '/min' },
  {
    name: 'hba1c',
    codes: ['4548-4', '17856-6'],
    unit: '%',
    // IFCC (mmol/mol) to NGSP (%): the IFCC-NGSP master equation.
    from: { 'mmol/mol': (value) => 0.09148 * value + 2.152 },
  },
  massPerVolume('glucose', ['2345-7', '2339-0', '1558-6', '15074-8', '14749-6'], glucoseMgDl),
  massPerVolume('total_cholesterol', ['2093-3', '14647-2'], cholesterolMgDl),
  massPerVolume('hdl_cholesterol', ['2085-9', '14646-4'], cholesterolMgDl),
  massPerVolume('ldl_cholesterol', ['18262-6', '13457-7', '2089-1', '22748-8'], cholesterolMgDl),
  massPerVolume('triglycerides', ['2571-8', '14927-8'], triglyceridesMgDl),
];

/**
 * Spellings of units as feeds write them (lower case, no spaces) to their UCUM code. A unit that
 * is not here is not guessed: the value is left out.
 */
const UNIT_SPELLINGS: Readonly<Record<string, string>> = {
  'kg/m2': 'kg/m2',
  'kg/m^2': 'kg/m2',
  'kg/m²': 'kg/m2',
  kg: 'kg',
  g: 'g',
  '[lb_av]': '[lb_av]',
  lb: '[lb_av]',
  lbs: '[lb_av]',
  cm: 'cm',
  m: 'm',
  '[in_i]': '[in_i]',
  in: '[in_i]',
  'mm[hg]': 'mm[Hg]',
  mmhg: 'mm[Hg]',
  '%': '%',
  'mmol/mol': 'mmol/mol',
  'mg/dl': 'mg/dL',
  'mmol/l': 'mmol/L',
  '/min': '/min',
  '{beats}/min': '/min',
  'beats/min': '/min',
  'beats/minute': '/min',
  bpm: '/min',
};

/** The UCUM code of a unit as written (a UCUM code, or a common spelling), if known. */
export function ucumOf(unit: string | undefined): string | undefined {
  if (unit === undefined) return undefined;
  return UNIT_SPELLINGS[unit.trim().toLowerCase().replaceAll(' ', '')];
}

/** Tobacco smoking status (LOINC 72166-2, the US Core and C-CDA smoking status). */
export const SMOKING_STATUS = '72166-2';

export type SmokingStatus = 'current' | 'former' | 'never' | 'unknown';

/**
 * The answers of 72166-2, SNOMED CT (US Core's value set) and LOINC answer codes, to what they
 * say. `current` covers every-day, some-day, heavy and light smokers.
 */
export const SMOKING_ANSWERS: Readonly<Record<string, { system: string; status: SmokingStatus }>> =
  {
    '449868002': { system: SNOMED, status: 'current' }, // current every day smoker
    '428041000124106': { system: SNOMED, status: 'current' }, // current some day smoker
    '77176002': { system: SNOMED, status: 'current' }, // smoker, current status unknown
    '428071000124103': { system: SNOMED, status: 'current' }, // current heavy tobacco smoker
    '428061000124105': { system: SNOMED, status: 'current' }, // current light tobacco smoker
    '8517006': { system: SNOMED, status: 'former' }, // ex-smoker
    '266919005': { system: SNOMED, status: 'never' }, // never smoked tobacco
    '266927001': { system: SNOMED, status: 'unknown' }, // tobacco smoking consumption unknown
    'LA18976-3': { system: LOINC, status: 'current' }, // current every day smoker
    'LA18977-1': { system: LOINC, status: 'current' }, // current some day smoker
    'LA18981-3': { system: LOINC, status: 'current' }, // smoker, current status unknown
    'LA18979-7': { system: LOINC, status: 'current' }, // heavy tobacco smoker
    'LA18982-1': { system: LOINC, status: 'current' }, // light tobacco smoker
    'LA15920-4': { system: LOINC, status: 'former' }, // former smoker
    'LA18978-9': { system: LOINC, status: 'never' }, // never smoker
    'LA18980-5': { system: LOINC, status: 'unknown' }, // unknown if ever smoked
  };

/** A count or score whose unit the LOINC code fixes, whatever unit text the feed wrote. */
export interface CountedItem {
  /** The key inside its section of `patient_history`. */
  name: string;
  code: string;
  /** The UCUM code it is sent with. */
  unit: string;
}

/** Alcohol use: drinks per day (US Core) and the AUDIT-C total score (0 to 12). */
export const ALCOHOL: readonly CountedItem[] = [
  { name: 'drinks_per_day', code: '74013-4', unit: '/d' },
  { name: 'audit_c_score', code: '75626-2', unit: '{score}' },
];

/** Physical activity: the Exercise Vital Sign and its parts (HL7 Physical Activity IG). */
export const ACTIVITY: readonly CountedItem[] = [
  { name: 'active_minutes_per_week', code: '82290-8', unit: 'min/wk' },
  { name: 'active_days_per_week', code: '89555-7', unit: 'd/wk' },
  { name: 'active_minutes_per_day', code: '68516-4', unit: 'min/d' },
  { name: 'strength_days_per_week', code: '82291-6', unit: 'd/wk' },
];

/** `active_minutes_per_week` derived from the two EVS questions when it was not asked itself. */
export const DAYS_PER_WEEK = '89555-7';
export const MINUTES_PER_DAY = '68516-4';
export const MINUTES_PER_WEEK = '82290-8';

/**
 * Questions whose number is someone's age (a relative's, in a family-history questionnaire): over
 * 89 it is sent as 90, as the patient's own age is (HIPAA Safe Harbor covers relatives too).
 */
export const AGE_QUESTIONS: ReadonlySet<string> = new Set(['54141-7', '30525-0', '21612-7']);

/** The oldest age sent as itself; older is sent as 90. */
export const MAX_EXACT_AGE = 89;
