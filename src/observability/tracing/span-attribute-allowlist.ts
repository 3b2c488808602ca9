import type { AttributeValue, Attributes } from '@opentelemetry/api';

/**
 * What a span may carry out of the process. Spans leave for a collector this product does not
 * control, so nothing decides per call site what is safe: an attribute survives only when its key
 * is listed here and its value has the listed shape; everything else is dropped before export
 * (the allowlist span processor). No key here can hold a patient identifier, a name or free text,
 * and the value shapes stop a long or spaced string even under a listed key.
 */
export type ValueShape =
  /** A short code: letters, digits and `_ . : / @ [ ] -`, no space, at most 64 characters. */
  | 'code'
  /** A whole number. */
  | 'int'
  /** true or false. */
  | 'bool'
  /** One of the listed strings. */
  | readonly string[];

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', '_OTHER'];

/** Keys allowed on spans (and on span events and links), with the shape of their values. */
export const SPAN_ATTRIBUTE_ALLOWLIST: ReadonlyMap<string, ValueShape> = new Map<
  string,
  ValueShape
>([
  // Ours: codes and counters of the pipeline, never a person's data.
  ['cw.feed', 'code'],
  ['cw.partition', 'int'],
  ['cw.ccsr_category', 'code'],
  ['cw.preset', 'code'],
  ['cw.query.seq', 'int'],
  ['cw.remote_job_id', 'code'],
  ['cw.poll.attempt', 'int'],
  ['cw.delivery.attempt', 'int'],
  ['cw.outcome', 'code'],
  ['cw.error.code', 'code'],
  ['cw.batch.size', 'int'],
  ['cw.role', 'code'],
  // HTTP (semantic conventions): a route template, never the path or the query.
  ['http.request.method', HTTP_METHODS],
  ['http.response.status_code', 'int'],
  ['http.route', 'code'],
  ['url.scheme', ['http', 'https']],
  ['server.address', 'code'],
  ['server.port', 'int'],
  ['network.protocol.version', 'code'],
  ['error.type', 'code'],
  // Redis.
  ['db.system', 'code'],
  ['db.system.name', 'code'],
  ['db.operation.name', 'code'],
  // Messaging (semantic conventions), listed one by one: `messaging.message.body` and
  // `messaging.message.id` exist too and must not pass.
  ['messaging.system', 'code'],
  ['messaging.operation.type', 'code'],
  ['messaging.operation.name', 'code'],
  ['messaging.destination.name', 'code'],
  ['messaging.batch.message_count', 'int'],
  // BullMQ (bullmq-otel): queue and job names and counts. Not job ids, keys, options, data,
  // progress, results or failure reasons.
  ['bullmq.queue.name', 'code'],
  ['bullmq.queue.operation', 'code'],
  ['bullmq.job.name', 'code'],
  ['bullmq.job.type', 'code'],
  ['bullmq.job.attempts.made', 'int'],
  ['bullmq.job.bulk.count', 'int'],
  ['bullmq.worker.name', 'code'],
  // Recorded exceptions: the class, never the message or the stack.
  ['exception.type', 'code'],
]);

const CODE = /^[\w.:/@[\]-]{1,64}$/;

function fits(shape: ValueShape, value: AttributeValue): boolean {
  if (shape === 'code') return typeof value === 'string' && CODE.test(value);
  if (shape === 'int') return typeof value === 'number' && Number.isSafeInteger(value);
  if (shape === 'bool') return typeof value === 'boolean';
  return typeof value === 'string' && shape.includes(value);
}

/** Whether `key` with `value` may leave the process. */
export function allowedAttribute(key: string, value: AttributeValue | undefined): boolean {
  const shape = SPAN_ATTRIBUTE_ALLOWLIST.get(key);
  return shape !== undefined && value !== undefined && fits(shape, value);
}

/** The allowed part of `attributes`, and how many were dropped. */
export function guardAttributes(attributes: Attributes | undefined): {
  attributes: Attributes;
  dropped: number;
} {
  const kept: Attributes = {};
  let dropped = 0;
  if (attributes === undefined) return { attributes: kept, dropped };
  for (const [key, value] of Object.entries(attributes)) {
    if (allowedAttribute(key, value)) kept[key] = value;
    else dropped += 1;
  }
  return { attributes: kept, dropped };
}

const NAME = /^[\w.:/@{} -]{1,80}$/;

/**
 * A span or event name as it may leave: names are constants of the code (`cgs.submit`, BullMQ's
 * `add concordance-queries`); one that does not look like one is replaced.
 */
export function guardName(name: string): string {
  return NAME.test(name) && !/\d{4}/.test(name) ? name : 'redacted';
}
