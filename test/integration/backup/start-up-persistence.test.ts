import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.ts';
import {
  startPipelineProcesses,
  type PipelineProcesses,
} from '../../support/pipeline-processes.ts';

/** The start-up's persistence lines of `start` (ingest and workers in one process). */
const persistenceLines = (p: PipelineProcesses) =>
  p.start.lines
    .filter((line) => line.includes('"redis_persistence"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('the start-up says whether Redis keeps its data on disk', () => {
  let p: PipelineProcesses;

  beforeAll(async () => {
    p = await startPipelineProcesses({
      apiKey: 'persistence-start-api-key',
      token: 'persistence-start-ingest-token-0123456789',
      configLines: [],
    });
  });
  afterAll(() => p.close());

  it('warns once per role that the test Redis keeps nothing on disk', async () => {
    const lines = await eventually(
      async () => persistenceLines(p),
      (found) => found.length >= 2,
    );
    expect(lines.map((l) => l.role).sort()).toEqual(['ingest', 'work']);
    for (const line of lines) {
      expect(line).toMatchObject({ level: 40, redis_persistence: 'none' });
      expect(String(line.msg)).toContain('Redis keeps nothing on disk');
    }
    expect(await p.start.stop('SIGTERM')).toBe(0);
    // Once each, for the whole run.
    expect(persistenceLines(p)).toHaveLength(2);
  });
});
