import type { ConfigProblem } from './config-error.ts';
import type { Config } from './config-schema.ts';
import {
  checkCredential,
  checkSecretKey,
  checkToken,
  checkWebhookSecret,
} from './secret-strength.ts';

/** The simulator's default key (`concordance-worker simulator`): fine locally, never issued by a real service. */
const SIMULATOR_DEV_KEY = 'local-dev-key';

/** The password of a `redis[s]://user:password@host` URL, decoded; undefined when there is none. */
function passwordOf(url: string): string | undefined {
  try {
    const password = new URL(url).password;
    return password === '' ? undefined : decodeURIComponent(password);
  } catch {
    return undefined;
  }
}

/**
 * Every secret that is set but too weak, by path (see `secret-strength.ts`). A secret that is not
 * set is a matter for the role that needs it (`roleProblems`), not for this check.
 */
export function secretProblems(config: Config): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const add = (path: string, messages: readonly string[]) => {
    for (const message of messages) problems.push({ path, message });
  };
  const crosswalk = config.identity.crosswalk_key;
  if (crosswalk !== undefined) {
    add('identity.crosswalk_key', checkSecretKey('CROSSWALK_KEY', crosswalk));
  }
  // `<id>:<secret>[,...]`: each secret as CROSSWALK_KEY (the form itself: `CrosswalkKeyring`).
  for (const entry of config.identity.crosswalk_keys?.split(',') ?? []) {
    const colon = entry.indexOf(':');
    if (colon < 0) continue;
    const id = entry.slice(0, colon).trim();
    add(
      'identity.crosswalk_keys',
      checkSecretKey(`CROSSWALK_KEYS (key id "${id}")`, entry.slice(colon + 1).trim()),
    );
  }
  const preventKey = config.prevent.id_key;
  if (preventKey !== undefined) {
    add('prevent.id_key', checkSecretKey('PREVENT_ID_KEY', preventKey));
  }
  // Several webhook secrets (a rotation's overlap) are each checked, named by their place.
  const webhook = config.delivery.webhook.secret ?? [];
  webhook.forEach((secret, index) => {
    const name =
      webhook.length === 1
        ? 'WEBHOOK_SECRET'
        : `WEBHOOK_SECRET (secret ${index + 1} of ${webhook.length})`;
    add('delivery.webhook.secret', checkWebhookSecret(name, secret));
  });
  const outboundKey = config.delivery.outbound_queue.key;
  if (outboundKey !== undefined) {
    add('delivery.outbound_queue.key', checkSecretKey('OUTBOUND_KEY', outboundKey));
  }
  // `OUTBOUND_KEYS`: each secret as OUTBOUND_KEY (the form itself: `OutboundKeyring`).
  for (const entry of config.delivery.outbound_queue.keys?.split(',') ?? []) {
    const colon = entry.indexOf(':');
    if (colon < 0) continue;
    const id = entry.slice(0, colon).trim();
    add(
      'delivery.outbound_queue.keys',
      checkSecretKey(`OUTBOUND_KEYS (key id "${id}")`, entry.slice(colon + 1).trim()),
    );
  }
  config.admin.tokens?.forEach((token, index) => {
    add(`admin.tokens.${index}`, checkToken(`ADMIN_TOKENS (token ${index + 1})`, token));
  });
  config.ingest.tokens?.forEach((token, index) => {
    add(`ingest.tokens.${index}`, checkToken(`INGEST_TOKENS (token ${index + 1})`, token));
  });
  // The queue view's tokens are its own: one that also opens the ingest or admin routes is refused.
  const others = new Set([...(config.ingest.tokens ?? []), ...(config.admin.tokens ?? [])]);
  config.admin.queue_view.tokens?.forEach((token, index) => {
    const path = `admin.queue_view.tokens.${index}`;
    add(path, checkToken(`QUEUE_VIEW_TOKENS (token ${index + 1})`, token));
    if (others.has(token)) {
      add(path, [
        `QUEUE_VIEW_TOKENS (token ${index + 1}) is also an ingest or admin token: give the queue view a token of its own`,
      ]);
    }
  });
  const apiKey = config.service.api_key;
  if (apiKey !== undefined) {
    const samples = config.service.env === 'local' ? [] : [SIMULATOR_DEV_KEY];
    add('service.api_key', checkCredential('SERVICE_API_KEY', apiKey, samples));
  }
  const redisPassword = passwordOf(config.redis.url);
  if (redisPassword !== undefined) {
    add('redis.url', checkCredential('the password in REDIS_URL', redisPassword));
  }
  const fhirToken = config.fhir.token;
  if (fhirToken !== undefined) add('fhir.token', checkCredential('FHIR_TOKEN', fhirToken));
  const terminologyToken = config.terminology.server.token;
  if (terminologyToken !== undefined) {
    add('terminology.server.token', checkCredential('TERMINOLOGY_TOKEN', terminologyToken));
  }
  return problems;
}
