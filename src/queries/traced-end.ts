/**
 * How a query ended, as its message trace notes it (docs/message-trace.md): `ended_at` is the
 * write's time; `outcome` (`completed`, `failed`, `lost`, `timed_out`, `rejected`, `superseded`,
 * `stale`), the error code (`ERR_*`) and the result event's id when there is one.
 */
export interface TracedEnd {
  outcome: string;
  errorCode?: string | undefined;
  eventId?: string | undefined;
}
