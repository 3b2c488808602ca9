/**
 * `npm run openapi`: writes docs/openapi.json, the OpenAPI description the ingest app serves at
 * `/openapi.json`, formatted as prettier formats it. The app is built by the composition root as
 * `ingest` builds it, with the default configuration; its Redis connection is never opened (no
 * request reaches a store), so no Redis is needed. `--check` writes nothing and exits 1 when the
 * file differs from what the app serves.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { App } from '../src/app/compose-app.ts';
import { loadConfig } from '../src/config/load-config.ts';
import { generateCrosswalkSecret } from '../src/identity/crosswalk-keys.ts';
import { OPENAPI_PATH } from '../src/ingest/openapi/ingest-openapi.ts';
import { createLogger } from '../src/observability/logger.ts';
import { requestConnection } from '../src/queues/redis-connections.ts';

/** The checked-in description. */
export const OPENAPI_FILE = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));

/** The description as the file holds it: prettier's JSON formatting, with the project's options. */
export async function formatOpenApi(document: unknown): Promise<string> {
  const options = await resolveConfig(OPENAPI_FILE);
  return format(JSON.stringify(document), { ...options, parser: 'json' });
}

/** What an ingest app built with the default configuration serves at {@link OPENAPI_PATH}. */
export async function servedOpenApi(): Promise<unknown> {
  const token = 'openapi-writer-token-0123456789';
  const config = loadConfig({
    env: {
      INGEST_TOKENS: token,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      LOG_LEVEL: 'silent',
    },
  });
  // Never connected: building and describing the app sends no command.
  const redis = requestConnection(config.redis, 'openapi-writer', { lazyConnect: true });
  const logger = createLogger({ name: 'openapi', level: 'silent' });
  const composed = App.compose(config, logger, { redis });
  // No query queue is opened: the purge is described, never run.
  const patientAdmin = composed.patientAdmin([]);
  const app = await composed.ingestApp({ ...composed.ingestParts(), admin: patientAdmin.admin });
  try {
    const res = await app.inject({
      method: 'GET',
      url: OPENAPI_PATH,
      headers: { authorization: `Bearer ${token}` },
    });
    if (res.statusCode !== 200) throw new Error(`${OPENAPI_PATH} answered ${res.statusCode}`);
    return res.json();
  } finally {
    await app.close();
    await patientAdmin.close();
    redis.disconnect();
  }
}

async function main(check: boolean): Promise<number> {
  const text = await formatOpenApi(await servedOpenApi());
  if (check) {
    const current = await readFile(OPENAPI_FILE, 'utf8').catch(() => '');
    if (current === text) return 0;
    process.stderr.write(`${OPENAPI_FILE} is out of date: run \`npm run openapi\`\n`);
    return 1;
  }
  await writeFile(OPENAPI_FILE, text);
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.includes('--check'));
}
