import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config-schema.ts';
import type { Logger } from '../observability/logger.ts';
import { cliActor } from '../privacy/audit-actor.ts';
import type { AuditAction, AuditEntry } from '../privacy/audit-entry.ts';
import { AuditLog } from '../privacy/audit-log.ts';
import type { RedisClient } from '../queues/redis-client.ts';

/**
 * Appends what a command did to the audit log (`config.redis.prefix`, `admin.audit.max_entries`):
 * `action`, done now by the OS user (`cli:<user>`), with `counts` and a fresh request id; no
 * patient in the entry.
 */
export async function auditCliAction(
  context: { config: Config; redis: RedisClient; logger: Logger },
  action: AuditAction,
  counts: AuditEntry['counts'],
): Promise<void> {
  const { config, redis, logger } = context;
  await new AuditLog({
    redis,
    prefix: config.redis.prefix,
    maxEntries: config.admin.audit.max_entries,
    logger,
  }).append({
    action,
    actor: cliActor(),
    at: new Date().toISOString(),
    outcome: 'done',
    counts,
    request_id: randomUUID(),
  });
}
