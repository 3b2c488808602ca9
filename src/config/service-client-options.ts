import { outboundDispatcher } from '../connections/outbound-dispatcher.ts';
import type { ServiceClientOptions } from '../service/create-service-client.ts';
import type { ServiceSlice } from './config-slices.ts';
import { serviceBaseUrl } from './load-config.ts';

/** The client's options from a validated configuration (the API key must be set). */
export function serviceClientOptions(
  config: ServiceSlice,
  extra: Partial<ServiceClientOptions> = {},
): ServiceClientOptions {
  const { service } = config;
  return {
    baseUrl: serviceBaseUrl(config),
    apiKey: service.api_key ?? '',
    timeoutMs: service.timeout_ms,
    retry: {
      limit: service.retry.limit,
      baseDelayMs: service.retry.base_delay_ms,
      maxDelayMs: service.retry.max_delay_ms,
      maxRetryAfterMs: service.retry.max_retry_after_ms,
    },
    statuses: service.statuses,
    preventPaths: service.prevent_paths,
    dispatcher: outboundDispatcher(config.outbound),
    ...extra,
  };
}
