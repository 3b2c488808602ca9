import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, type ConfigProblem } from './config-error.ts';
import { loadConfig } from './load-config.ts';
import { MAX_WEBHOOK_SECRETS } from './webhook-secrets.ts';

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const URL = 'https://receiver.hospital.example/hooks/concordance';
const load = (webhookSecret: string) =>
  loadConfig({ env: { WEBHOOK_URL: URL, WEBHOOK_SECRET: webhookSecret } });

function problemsOf(load: () => unknown): readonly ConfigProblem[] {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('WEBHOOK_SECRET', () => {
  it('holds one secret, or several separated by spaces or commas, in their order', () => {
    const [a, b, c] = [secret(), secret(), secret()];
    expect(load(a).delivery.webhook.secret).toEqual([a]);
    expect(load(` ${a} `).delivery.webhook.secret).toEqual([a]);
    for (const text of [
      `${a} ${b} ${c}`,
      `${a},${b},${c}`,
      `${a}, ${b}\n${c}`,
      `,${a},,${b} ,${c},`,
    ]) {
      expect(load(text).delivery.webhook.secret).toEqual([a, b, c]);
    }
    const max = Array.from({ length: MAX_WEBHOOK_SECRETS }, secret);
    expect(load(max.join(' ')).delivery.webhook.secret).toEqual(max);
  });

  it(`refuses more than ${MAX_WEBHOOK_SECRETS}, the same secret twice, a malformed one, or none`, () => {
    const [a, b] = [secret(), secret()];
    const cases: [text: string, path: string, message: RegExp][] = [
      [
        Array.from({ length: MAX_WEBHOOK_SECRETS + 1 }, secret).join(' '),
        'delivery.webhook.secret',
        /at most 4 secrets/,
      ],
      [`${a} ${b} ${a}`, 'delivery.webhook.secret', /the same secret twice/],
      // The same key, with and without its base64 padding.
      [`${a} ${a.replace(/=+$/, '')}`, 'delivery.webhook.secret', /the same secret twice/],
      [`${a} whsec_not*base64*at*all`, 'delivery.webhook.secret.1', /whsec_ \+ base64/],
      [`${a};${b}`, 'delivery.webhook.secret.0', /whsec_ \+ base64/],
      [' , ,', 'delivery.webhook.secret', /holds no secret/],
    ];
    for (const [text, path, message] of cases) {
      const problems = problemsOf(() => load(text));
      expect(problems, text).toMatchObject([{ path, message: expect.stringMatching(message) }]);
      const said = JSON.stringify(problems);
      for (const part of text.split(/[\s,;]+/).filter((p) => p.length > 10)) {
        expect(said).not.toContain(part.slice('whsec_'.length));
      }
    }
  });

  it('checks the strength of each, naming it by its place and never printing it', () => {
    const weak = `whsec_${Buffer.alloc(24).toString('base64')}`;
    const strong = secret();
    const problems = problemsOf(() => load(`${strong} ${weak}`));
    expect(problems).toMatchObject([
      {
        path: 'delivery.webhook.secret',
        message: expect.stringContaining('WEBHOOK_SECRET (secret 2 of 2)') as string,
      },
    ]);
    expect(JSON.stringify(problems)).not.toContain(strong.slice('whsec_'.length));
  });

  it('comes only from the environment', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cw-webhook-secret-')), 'config.yaml');
    writeFileSync(file, `delivery: { webhook: { secret: [${secret()}] } }\n`);
    expect(problemsOf(() => loadConfig({ file, env: {} }))).toMatchObject([
      { path: 'delivery.webhook.secret', message: expect.stringContaining('WEBHOOK_SECRET') },
    ]);
  });
});
