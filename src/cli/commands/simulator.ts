import { InvalidArgumentError, Option, type Command } from 'commander';
import { processRegistry } from '../../observability/process-registry.ts';
import { startHealthServer, type HealthServer } from '../../runtime/health-app.ts';
import type { FaultProfile } from '../../simulator/fault-profile.ts';
import { loadFaultProfile } from '../../simulator/faults/load-fault-profile.ts';
import { startSimulator } from '../../simulator/start-simulator.ts';
import { wholeNumber } from '../option-parsers.ts';

interface SimulatorCliOptions {
  port: number;
  host: string;
  apiKey: string[];
  adminKey?: string;
  seed: number;
  faults?: string;
  latency: { minMs: number; maxMs: number };
  requestLog: number;
  relationships: number;
  maxListLimit: number;
  jobTtl: number;
  healthPort?: number;
}

/** The key used when neither --api-key nor SERVICE_API_KEY is given: for local use only. */
export const DEFAULT_DEV_KEY = 'local-dev-key';

function latencyRange(raw: string): { minMs: number; maxMs: number } {
  const match = /^(\d+)-(\d+)$/.exec(raw);
  const [minMs, maxMs] = [Number(match?.[1]), Number(match?.[2])];
  if (!match || minMs > maxMs) {
    throw new InvalidArgumentError('expected MIN_MS-MAX_MS with MIN_MS <= MAX_MS, e.g. 1000-4000');
  }
  return { minMs, maxMs };
}

function nonEmpty(name: string) {
  return (raw: string): string => {
    if (raw.trim() === '') throw new InvalidArgumentError(`${name} must not be empty`);
    return raw;
  };
}

const collectKey = (raw: string, previous: string[]) => [...previous, nonEmpty('an API key')(raw)];

/**
 * `concordance-worker simulator`: runs the local Clinical Graph Service until SIGINT/SIGTERM.
 * Invalid options end with one error line and exit code 2; no key is ever printed.
 */
export function registerSimulatorCommand(program: Command): void {
  program
    .command('simulator')
    .description('run the local Clinical Graph Service simulator')
    .option('--port <port>', 'TCP port (0: any free port)', wholeNumber(0, 65_535), 8090)
    .option('--host <host>', 'interface to listen on', nonEmpty('--host'), '127.0.0.1')
    .option(
      '--api-key <key>',
      `accepted x-api-key, repeatable (default: $SERVICE_API_KEY, else "${DEFAULT_DEV_KEY}")`,
      collectKey,
      [],
    )
    .option(
      '--admin-key <key>',
      'x-admin-key for /_admin (default: the first API key)',
      nonEmpty('--admin-key'),
    )
    .option(
      '--seed <n>',
      'seed of the graph, ids, job durations and faults',
      wholeNumber(0, 2 ** 32 - 1),
      1,
    )
    .option('--faults <file>', 'fault profile, YAML or JSON')
    .option('--latency <min-max>', 'concordance job duration in ms', latencyRange, {
      minMs: 1000,
      maxMs: 4000,
    })
    .option('--request-log <n>', 'requests kept for GET /_admin/requests', wholeNumber(0), 10_000)
    .option(
      '--relationships <n>',
      'relationships in the simulated graph',
      wholeNumber(1, 10_000_000),
      5_000,
    )
    .option(
      '--max-list-limit <n>',
      'largest limit of GET /v1/relationships; a larger one is answered 422',
      wholeNumber(1),
      1_000,
    )
    .option('--job-ttl <seconds>', 'how long a finished job stays readable', wholeNumber(0), 3600)
    .addOption(
      new Option(
        '--health-port <port>',
        'also serve /healthz, /readyz, /metrics on this port, on --host (0: any free port)',
      )
        .env('METRICS_PORT')
        .argParser(wholeNumber(0, 65_535)),
    )
    .showHelpAfterError(false)
    .action(async (opts: SimulatorCliOptions, command: Command) => {
      let faults: FaultProfile | undefined;
      if (opts.faults !== undefined) {
        try {
          faults = loadFaultProfile(opts.faults);
        } catch (err) {
          command.error(`error: option '--faults': ${(err as Error).message}`, {
            exitCode: 2,
            code: 'simulator.invalidFaults',
          });
        }
      }
      const envKey = process.env.SERVICE_API_KEY;
      const apiKeys = opts.apiKey.length > 0 ? opts.apiKey : [envKey ? envKey : DEFAULT_DEV_KEY];
      const started = performance.now();
      const simulator = await startSimulator({
        port: opts.port,
        host: opts.host,
        apiKeys,
        adminKey: opts.adminKey,
        seed: opts.seed,
        faults,
        latency: opts.latency,
        requestLogSize: opts.requestLog,
        relationshipCount: opts.relationships,
        maxListLimit: opts.maxListLimit,
        jobTtlMs: opts.jobTtl * 1000,
      });
      let health: HealthServer | undefined;
      if (opts.healthPort !== undefined) {
        try {
          health = await startHealthServer({
            port: opts.healthPort,
            host: opts.host,
            metrics: processRegistry(),
            // Ready once it listens: the simulator keeps nothing outside this process.
            checks: { simulator: () => true },
          });
        } catch (err) {
          await simulator.close();
          throw err;
        }
      }
      const keySource =
        opts.apiKey.length > 0 ? '--api-key' : envKey ? 'SERVICE_API_KEY' : 'the local dev default';
      process.stdout.write(
        `Clinical Graph Service simulator listening on ${simulator.url} ` +
          `(${apiKeys.length} API key${apiKeys.length === 1 ? '' : 's'} from ${keySource}, ` +
          `seed ${opts.seed}, ${opts.relationships} relationships` +
          `${opts.faults === undefined ? '' : `, faults from ${opts.faults}`}, ` +
          `${health === undefined ? '' : `health on ${health.url}, `}` +
          `started in ${Math.round(performance.now() - started)} ms)\n`,
      );
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        void Promise.all([simulator.close(), health?.close()]).then(() =>
          process.stdout.write('simulator stopped\n'),
        );
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}
