import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, InjectOptions } from 'fastify';
import {
  buildSimulatorApp,
  type SimulatorOptions,
} from '../../../src/simulator/start-simulator.ts';

export const API_KEY = 'test-api-key';
export const OTHER_KEY = 'second-api-key';
export const ADMIN_KEY = 'test-admin-key';
export const auth = { 'x-api-key': API_KEY };
export const admin = { 'x-admin-key': ADMIN_KEY };

/** A small record about essential hypertension (CIR007): condition, observation, intervention. */
export const hypertensionPatient = {
  nodes: [
    {
      id: 'c1',
      node_type: 'condition',
      notable: true,
      fhir_id: 'Condition/1',
      // No display: the local service matches the category by the ICD-10-CM code (I10 -> CIR007).
      coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'I10' }],
    },
    {
      id: 'o1',
      node_type: 'observation',
      notable: false,
      coding: [{ system: 'http://loinc.org', code: '8480-6', display: 'Systolic blood pressure' }],
    },
    { id: 'i1', node_type: 'intervention', notable: false, service_preferred_name: 'Lisinopril' },
  ],
  relationships: [
    { source_id: 'c1', target_id: 'o1' },
    { source_id: 'i1', target_id: 'c1' },
  ],
  demographics: { age: 64, gender: 'female' },
};

export const concordanceBody = { assembled_patient: hypertensionPatient, ccsr_category: 'CIR007' };

/** A simulator to inject into, with keys the tests know and jobs that finish at once. */
export function testApp(options: Partial<SimulatorOptions> = {}): FastifyInstance {
  return buildSimulatorApp({
    apiKeys: [API_KEY, OTHER_KEY],
    adminKey: ADMIN_KEY,
    latency: { minMs: 0, maxMs: 0 },
    relationshipCount: 500,
    ...options,
  });
}

/** Injects and returns status, headers and the JSON body (undefined when the body is not JSON). */
export async function call(app: FastifyInstance, options: InjectOptions) {
  const response = await app.inject(options);
  let body: unknown;
  try {
    body = response.json();
  } catch {
    body = undefined;
  }
  return { status: response.statusCode, headers: response.headers, body, raw: response.body };
}

/**
 * Polls `check` until it returns a value other than undefined. Bounded: gives up after
 * `attempts` polls; the pause between polls only paces the loop, it synchronises nothing.
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  { attempts = 500, pauseMs = 10 } = {},
): Promise<T> {
  for (let i = 0; i < attempts; i++) {
    const value = await check();
    if (value !== undefined) return value;
    await sleep(pauseMs);
  }
  throw new Error(`condition not met after ${attempts} polls`);
}
