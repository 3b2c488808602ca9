/** What the fault injector decided for one request. */
export type FaultAction =
  | { kind: 'none' }
  | { kind: 'hang' }
  | { kind: 'rate_limit'; retryAfterS: number; format: 'seconds' | 'http-date' }
  | { kind: 'error'; status: 400 | 404 | 413 | 415 | 500 | 502 | 503 }
  | { kind: 'malformed'; body: 'invalid_json' | 'wrong_shape' };

export interface FaultDecision {
  delayMs: number;
  action: FaultAction;
}

export const NO_FAULT: FaultDecision = { delayMs: 0, action: { kind: 'none' } };
