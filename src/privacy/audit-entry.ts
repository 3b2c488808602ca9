import { z } from 'zod';

/** The administrative actions that touch patient data. */
/** `show_duplicates`: `patient duplicates --show` printed local ids (issue 20). */
/**
 * `read_trace`: a patient's message trace read by its local id (`trace --patient`, the admin
 * route); `show_raw`: `trace --raw` opened the sealed messages of a control id (issue 21).
 */
export const AUDIT_ACTIONS = [
  'purge',
  'opt_out',
  'opt_in',
  'replay',
  'show_duplicates',
  'read_trace',
  'show_raw',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * One audit entry. It names who did what, when, and how much was touched; the patient only by
 * {@link auditPatientRef} (`hmac:…`), never by a local id or a patient_service_id, so that an
 * entry outlives a purge without pointing back at the patient.
 */
export const AuditEntrySchema = z.looseObject({
  action: z.enum(AUDIT_ACTIONS),
  /** `admin-token#N` (1-based position in `ADMIN_TOKENS`) or `cli:<OS user>`: never a token. */
  actor: z.string().min(1),
  /** When the action ended (ISO 8601). */
  at: z.iso.datetime(),
  /** `hmac:…` of the hospital's patient id; absent for actions without a patient (replay). */
  patient_ref: z
    .string()
    .regex(/^hmac:[A-Za-z0-9_-]+$/)
    .optional(),
  /** `done`, or `unknown_patient` when the patient was never seen (nothing was touched). */
  outcome: z.enum(['done', 'unknown_patient']),
  /** What was touched, by kind (keys, presets, jobs, events…). */
  counts: z.record(z.string(), z.int().min(0)),
  /** Ties the entry to the HTTP response or CLI output that reported it. */
  request_id: z.string().min(1),
});
export type AuditEntry = z.infer<typeof AuditEntrySchema>;

/** An entry as read back: with its stream id (`<ms>-<seq>`). */
export type StoredAuditEntry = AuditEntry & { id: string };
