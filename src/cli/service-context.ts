import type { Command } from 'commander';
import type { Config } from '../config/config-schema.ts';
import { loadConfig } from '../config/load-config.ts';
import { serviceClientOptions } from '../config/service-client-options.ts';
import { createServiceClient, type ServiceClient } from '../service/create-service-client.ts';
import { MissingApiKeyError } from './cli-errors.ts';

export interface ServiceContext {
  config: Config;
  client: ServiceClient;
}

/**
 * The configuration (`--config`, the environment: `SERVICE_BASE_URL`, `SERVICE_API_KEY`, …) and a
 * client of the Clinical Graph Service made from it, for the commands that call the service.
 */
export function serviceContext(program: Command): ServiceContext {
  const config = loadConfig({ file: program.opts<{ config?: string }>().config });
  if (config.service.api_key === undefined) throw new MissingApiKeyError();
  return { config, client: createServiceClient(serviceClientOptions(config)) };
}
