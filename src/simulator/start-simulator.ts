import type { AddressInfo } from 'node:net';
import { buildAppFromResolved } from './build-simulator-app.ts';
import { resolveSimulatorOptions, type SimulatorOptions } from './simulator-options.ts';

export { buildSimulatorApp } from './build-simulator-app.ts';
export type { SimulatorOptions } from './simulator-options.ts';
export { FaultProfileSchema, type FaultProfile } from './fault-profile.ts';

export interface RunningSimulator {
  /** Base address, e.g. `http://127.0.0.1:8090` (no trailing slash). */
  url: string;
  /** The port actually bound (useful with `port: 0`). */
  port: number;
  /** Stops listening, ends every connection (hung ones too) and releases everything. */
  close(): Promise<void>;
}

/** Starts the local Clinical Graph Service and resolves once it listens. */
export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const resolved = resolveSimulatorOptions(options);
  const app = buildAppFromResolved(resolved);
  try {
    await app.listen({ port: resolved.port, host: resolved.host });
  } catch (err) {
    await app.close();
    throw err;
  }
  const { port } = app.server.address() as AddressInfo;
  const host = resolved.host.includes(':') ? `[${resolved.host}]` : resolved.host;
  return {
    url: `http://${host}:${port}`,
    port,
    close: async () => {
      await app.close();
    },
  };
}
