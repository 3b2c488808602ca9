import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateCrosswalkSecret } from '../../../src/identity/crosswalk-keys.ts';
import { CliProcess } from '../../../tools/cli-process.ts';
import { packageInfo } from '../../../src/package-root.ts';
import { startOtlpReceiver } from '../../support/otlp-receiver.ts';
import { isolatedRedis, testRedisUrl } from '../../support/redis.ts';
import { samplePatient } from '../../support/sample-patient.ts';

describe('ingest start-up with OTEL_* variables', () => {
  it('an invalid OTEL_TRACES_SAMPLER stops the start (ERR_TRACING_ENV), naming the variable', async () => {
    const cli = new CliProcess(['ingest'], {
      REDIS_URL: testRedisUrl(),
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_TOKENS: randomBytes(24).toString('base64'),
      INGEST_PORT: '0',
      MLLP_PORT: '0',
      METRICS_PORT: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      OTEL_TRACES_SAMPLER: 'sometimes-planted',
    });
    const code = await cli.exited;
    const output = cli.lines.join('\n');
    expect(code, output).toBe(1);
    // The message of TracingEnvError (ERR_TRACING_ENV): the variable, what it accepts.
    expect(output).toContain(
      'concordance-worker: OTEL_TRACES_SAMPLER: invalid value (one of always_on, always_off,',
    );
    // Never the value; and nothing was opened.
    expect(output).not.toContain('sometimes-planted');
    expect(output).not.toContain('ingest ports open');
  });

  it('ingest with an endpoint: spans carry the role and version, and are exported at shutdown', async () => {
    const receiver = await startOtlpReceiver();
    const redis = await isolatedRedis();
    const token = randomBytes(24).toString('base64');
    const cli = new CliProcess(['ingest'], {
      REDIS_URL: testRedisUrl(),
      REDIS_PREFIX: redis.prefix,
      CROSSWALK_KEY: generateCrosswalkSecret(),
      INGEST_TOKENS: token,
      INGEST_PORT: '0',
      INGEST_HOST: '127.0.0.1',
      MLLP_PORT: '0',
      METRICS_PORT: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: 'always_on',
      // Longer than the test: only the shutdown's flush exports the span.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    try {
      const listening = JSON.parse(await cli.waitForLine('"ingest listening"')) as { url: string };
      const res = await fetch(`${listening.url}/v1/record-updates`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ patient_id: 'MRN-OTEL-CLI-1', assembled_patient: samplePatient }),
      });
      expect(res.status).toBe(202);
      expect(await cli.stop('SIGTERM'), cli.lines.join('\n')).toBe(0);
      const [server] = receiver.named('POST /v1/record-updates');
      expect(server?.resource).toMatchObject({
        'service.name': 'concordance-worker',
        'service.version': packageInfo().version,
        'cw.role': 'ingest',
      });
      expect(receiver.named('redis.commit')).toHaveLength(1);
    } finally {
      await cli.stop('SIGKILL');
      await receiver.close();
      await redis.cleanup();
    }
  });
});
