import { afterEach, describe, expect, it } from 'vitest';
import { CliProcess } from '../../../tools/cli-process.ts';
import { testRedisUrl } from '../../support/redis.ts';
import { DeliveryFixture, makeEvent } from './delivery-fixture.ts';

let fixture: DeliveryFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const cliOutput: string[] = [];

/** Runs `concordance-worker replay ARGS` to its end. */
async function replay(f: DeliveryFixture, ...args: string[]): Promise<string[]> {
  const cli = new CliProcess(['replay', ...args], {
    REDIS_URL: testRedisUrl(),
    REDIS_PREFIX: f.prefix,
    CROSSWALK_KEY: f.crosswalkSecret,
    WEBHOOK_URL: f.receiver.url,
    WEBHOOK_SECRET: f.secret,
  });
  const code = await cli.exited;
  cliOutput.push(...cli.lines);
  expect(code, cli.lines.join('\n')).toBe(0);
  return cli.stdout;
}

describe('concordance-worker replay', () => {
  it('re-drives dead letters in event order; --dry-run changes nothing; --category and --since filter', async () => {
    let gone = true;
    const f = (fixture = await DeliveryFixture.start({ respond: () => (gone ? 410 : 204) }));
    const a1 = makeEvent({ patient_id: 'MRN-REPLAY-PLANTED' });
    const b1 = makeEvent({ ccsr_category: 'CIR007' });
    const a2 = makeEvent();
    const b2 = makeEvent({ ccsr_category: 'CIR007', patient_service_id: 'psid-0002' });
    const all = [a1, b1, a2, b2];
    await f.deliver(...all);
    for (const e of all) await f.untilOutcome(e.id, 'dead_lettered');
    expect(await f.deadLetters.count()).toBe(4);
    gone = false;
    const attemptsBefore = f.receiver.attempts.length;

    // Dry run: every letter listed, oldest first, with its last error; nothing changes.
    const dry = await replay(f, '--dry-run');
    expect(dry.slice(0, -1)).toEqual(
      all.map((e) => `${e.id}  ${e.ccsr_category}  ${e.created_at}  ERR_WEBHOOK_GONE (HTTP 410)`),
    );
    expect(dry.at(-1)).toBe('4 dead letter(s) would be re-driven (dry run: nothing changed)');
    expect(await f.deadLetters.count()).toBe(4);
    for (const e of all) expect((await f.webhook.store.state(e.id))?.state).toBe('dead');
    expect(await f.webhook.queue.count()).toBe(0);

    // --category: only END002, back in order; the CIR007 letters stay.
    const redriven = await replay(f, '--category', 'END002');
    expect(redriven.slice(0, -1).map((line) => line.split('  ')[0])).toEqual([a1.id, a2.id]);
    expect(redriven.at(-1)).toBe('2 dead letter(s) re-driven');
    await f.untilReceived(a1.id, a2.id);
    expect(f.receiver.events.map((e) => e.webhookId)).toEqual([a1.id, a2.id]);
    expect((await f.deadLetters.list()).map((l) => l.event.id)).toEqual([b1.id, b2.id]);

    // --since: only events created at or after b2.
    const since = await replay(f, '--since', b2.created_at);
    expect(since.slice(0, -1).map((line) => line.split('  ')[0])).toEqual([b2.id]);
    await f.untilReceived(b2.id);
    expect((await f.deadLetters.list()).map((l) => l.event.id)).toEqual([b1.id]);

    // The rest; then there is nothing left to re-drive.
    expect((await replay(f)).at(-1)).toBe('1 dead letter(s) re-driven');
    await f.untilReceived(b1.id);
    expect(await replay(f)).toEqual(['0 dead letter(s) re-driven']);

    // Each re-driven event arrived once more, signed, with its original id and content.
    const again = f.receiver.attempts.slice(attemptsBefore);
    expect(again.map((a) => a.webhookId).sort()).toEqual(all.map((e) => e.id).sort());
    expect(again.every((a) => a.verified && a.status === 204)).toBe(true);
    expect(f.receiver.events.find((e) => e.webhookId === a1.id)?.payload).toMatchObject({
      ...a1,
      changed: true,
    });
    // Every replay but the dry run is in the audit log, with its count and no patient.
    const audit = await f.redis.xrange(`${f.prefix}:audit`, '-', '+');
    const entries = audit.map(([, fields]) => JSON.parse(fields[1] ?? '{}'));
    expect(entries.map((e) => [e.action, e.counts.dead_letters])).toEqual([
      ['replay', 2],
      ['replay', 1],
      ['replay', 1],
      ['replay', 0],
    ]);
    expect(entries.every((e) => e.patient_ref === undefined && /^cli:/.test(e.actor))).toBe(true);

    // The hospital's patient id went to the webhook, never to the command's output or logs.
    expect(cliOutput.length).toBeGreaterThan(0);
    expect(cliOutput.filter((line) => line.includes('MRN-REPLAY-PLANTED'))).toEqual([]);
  });
});
