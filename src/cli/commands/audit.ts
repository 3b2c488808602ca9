import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import type { StoredAuditEntry } from '../../privacy/audit-entry.ts';
import { AuditLog } from '../../privacy/audit-log.ts';
import { auditPatientRef } from '../../privacy/patient-reference.ts';
import { requestConnection } from '../../queues/redis-connections.ts';
import { crosswalkKeysFrom } from '../../app/compose-app.ts';
import { formatTable } from '../format-table.ts';

interface AuditListOptions {
  since?: Date;
  patientId?: string;
  json?: boolean;
}

function instant(raw: string): Date {
  const at = new Date(raw);
  if (Number.isNaN(at.getTime())) {
    throw new InvalidArgumentError(
      'expected a date or time, e.g. 2026-11-02 or 2026-11-02T08:00:00Z',
    );
  }
  return at;
}

export function auditTable(entries: readonly StoredAuditEntry[]): string {
  return formatTable(
    ['at', 'action', 'actor', 'outcome', 'patient', 'counts', 'request id'],
    entries.map((e) => [
      e.at,
      e.action,
      e.actor,
      e.outcome,
      e.patient_ref ?? '-',
      Object.entries(e.counts)
        .map(([name, n]) => `${name}=${n}`)
        .join(' ') || '-',
      e.request_id,
    ]),
  );
}

/** `concordance-worker audit list [--since] [--patient-id] [--json]`. */
export function registerAuditCommand(program: Command): void {
  program
    .command('audit')
    .description('the audit log of purges, opt-outs, opt-ins and replays')
    .command('list')
    .description('list audit entries, oldest first')
    .option('--since <time>', 'only entries written at or after this time (ISO 8601)', instant)
    .option(
      '--patient-id <id>',
      'only entries of this hospital patient id (needs CROSSWALK_KEY: entries hold only an HMAC)',
    )
    .option('--json', 'print one JSON array instead of a table')
    .action(async (options: AuditListOptions) => {
      const config = loadConfig({ file: program.opts<{ config?: string }>().config });
      const patientRef =
        options.patientId === undefined
          ? undefined
          : auditPatientRef(crosswalkKeysFrom(config), options.patientId);
      const redis = requestConnection(config.redis, 'cw-audit', { enableOfflineQueue: true });
      try {
        const audit = new AuditLog({ redis, prefix: config.redis.prefix });
        const entries = await audit.list({ since: options.since, patientRef });
        process.stdout.write(
          options.json === true
            ? `${JSON.stringify(entries, null, 2)}\n`
            : `${auditTable(entries)}\n${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}\n`,
        );
      } finally {
        await redis.quit();
      }
    });
}
