import type { ServiceResponseInfo } from '../../../../src/service/create-service-client.ts';

/** A `sleep` that records each requested delay and resolves at once (or after `then`). */
export function recordingSleep(then?: (ms: number) => Promise<void> | void): {
  delays: number[];
  sleep: (ms: number) => Promise<void>;
} {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms) => {
      delays.push(ms);
      await then?.(ms);
    },
  };
}

/** Collects what the client hands to its logger and its onResponse hook. */
export function recordingHooks(): {
  warnings: { obj: object; msg: string | undefined }[];
  responses: ServiceResponseInfo[];
  logger: { warn(obj: object, msg?: string): void };
  onResponse: (info: ServiceResponseInfo) => void;
} {
  const warnings: { obj: object; msg: string | undefined }[] = [];
  const responses: ServiceResponseInfo[] = [];
  return {
    warnings,
    responses,
    logger: { warn: (obj, msg) => warnings.push({ obj, msg }) },
    onResponse: (info) => responses.push(info),
  };
}
