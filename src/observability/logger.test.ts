import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, REDACTED_PATHS } from './logger.ts';

/** A logger made by the production factory, writing into an array of parsed lines. */
function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ name: 'test', level: 'trace', destination });
  return { logger, lines };
}

const MARK = 'PLANTED-4711';

describe('createLogger redaction', () => {
  it('censors credentials, secrets, local patient ids, records and bodies at the top level and one level down', () => {
    const { logger, lines } = capture();
    const sensitive = {
      apiKey: `${MARK}-a`,
      api_key: `${MARK}-b`,
      authorization: `Bearer ${MARK}-c`,
      secret: `whsec_${MARK}-d`,
      webhook_secret: `whsec_${MARK}-e`,
      crosswalk_key: `${MARK}-f`,
      token: `${MARK}-g`,
      tokens: [`${MARK}-h`],
      patient_id: `${MARK}-i`,
      patientId: `${MARK}-j`,
      localId: `${MARK}-k`,
      assembled_patient: { demographics: { name: `${MARK}-l` } },
      record: { nodes: [{ metadata: { note: `${MARK}-m` } }] },
      concordance: { summary: `${MARK}-n` },
      body: { patient_id: `${MARK}-o` },
      headers: {
        'x-api-key': `${MARK}-p`,
        'x-admin-key': `${MARK}-q`,
        authorization: `Bearer ${MARK}-r`,
        cookie: `${MARK}-s`,
      },
    };
    logger.info(sensitive, 'top level');
    logger.warn({ event: sensitive, request: sensitive, config: sensitive }, 'nested');
    logger.child({ patient_id: `${MARK}-child` }).info('child bindings');

    expect(lines).toHaveLength(3);
    const all = lines.join('\n');
    expect(all).not.toContain(MARK);
    const [top, nested] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const key of Object.keys(sensitive).filter((k) => k !== 'headers')) {
      expect(top?.[key], key).toBe('[redacted]');
    }
    expect(top?.headers).toEqual({
      'x-api-key': '[redacted]',
      'x-admin-key': '[redacted]',
      authorization: '[redacted]',
      cookie: '[redacted]',
    });
    expect((nested?.event as Record<string, unknown>).patient_id).toBe('[redacted]');
    expect((nested?.request as Record<string, unknown>).record).toBe('[redacted]');
  });

  it('keeps the query context fields that log lines are searched by', () => {
    const { logger, lines } = capture();
    const context = {
      query_key: 'svc-1/END002',
      job_id: 'job-1',
      remote_job_id: 'remote-1',
      record_version: 3,
      patient_service_id: 'svc-1',
      ccsr_category: 'END002',
    };
    logger.child(context).info({ outcome: 'completed' }, 'query finished');
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ ...context, outcome: 'completed' });
  });

  it('lists every path the redaction test plants', () => {
    for (const path of [
      'patient_id',
      '*.patient_id',
      'assembled_patient',
      '*.assembled_patient',
      'record',
      '*.record',
      'secret',
      '*.secret',
      'webhook_secret',
      '*.webhook_secret',
      '*.concordance',
      'headers["x-api-key"]',
      'headers.authorization',
    ]) {
      expect(REDACTED_PATHS).toContain(path);
    }
  });
});
