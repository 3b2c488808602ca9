/**
 * Every `error.code` a result event can carry, with what it means for the hospital. The list is
 * the contract: the hospital's code may switch on these values. A new ending adds a code here
 * (the lifecycle's types refuse any other).
 */
export const RESULT_ERROR_CODES = {
  /** No record is stored for the patient (purged, or never stored) when the query was due. */
  ERR_RECORD_MISSING: 'rejected',
  /** The patient opted out after the update that opened the query. */
  ERR_PATIENT_OPTED_OUT: 'rejected',
  /** The record cannot be turned into the service's shape (a value the interface refuses). */
  ERR_RECORD_NOT_ASSEMBLABLE: 'rejected',
  /** An identifier of the patient would have left the hospital: the record was not sent. */
  ERR_IDENTIFIER_LEAK: 'rejected',
  /** The service refused the request body (422), with its items. */
  ERR_SERVICE_VALIDATION: 'rejected',
  /** No birth date arrived within `queries.demographics_wait_s`: the record was not sent. */
  ERR_RECORD_WAITING_EXPIRED: 'failed',
  /** The remote job ended in a failure state (its concordance, if any, is included). */
  ERR_REMOTE_JOB_FAILED: 'failed',
  /** The remote job was still pending at `queries.poll.deadline_ms` after submission. */
  ERR_QUERY_TIMED_OUT: 'timed_out',
  /** The service no longer knew the remote job, and resubmissions were used up. */
  ERR_REMOTE_JOB_LOST: 'lost',
  /** A newer query of the same key was submitted (only with `queries.deliver_superseded`). */
  ERR_SUPERSEDED: 'failed',
  /** The query's worker stopped more than `queries.max_stalled_count` times while it ran. */
  ERR_QUERY_STALLED: 'failed',
  /** The query ended on an error the worker did not expect (see its log line). */
  ERR_QUERY_INTERNAL: 'failed',
  /** The service answered 400, 413 or 415: sending it again would not help. */
  ERR_SERVICE_REQUEST: 'failed',
  /** The service answered a 2xx the worker could not read (no job id, not JSON). */
  ERR_SERVICE_BAD_RESPONSE: 'failed',
  /** The service said the route does not exist (404 on submission). */
  ERR_SERVICE_NOT_FOUND: 'failed',
  /** Submission kept failing with 5xx or a network error for every attempt. */
  ERR_SERVICE_UNAVAILABLE: 'failed',
  /** Submission kept timing out for every attempt. */
  ERR_SERVICE_TIMEOUT: 'failed',
  /** The service refused a request parameter. */
  ERR_SERVICE_PARAMS: 'failed',
  /** Prevent: the record holds no biomarker and no history item Prevent can use; nothing was sent. */
  ERR_PREVENT_NO_DATA: 'rejected',
  /** Prevent: the worker has no `PREVENT_ID_KEY` (or Prevent is off there); nothing was sent. */
  ERR_PREVENT_NOT_CONFIGURED: 'failed',
} as const;

export type ResultErrorCode = keyof typeof RESULT_ERROR_CODES;

/** True for a code of {@link RESULT_ERROR_CODES}. */
export function isResultErrorCode(code: string): code is ResultErrorCode {
  return Object.hasOwn(RESULT_ERROR_CODES, code);
}
