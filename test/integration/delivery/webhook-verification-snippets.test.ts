import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceivedAttempt } from '../../../tools/webhook-receiver.ts';
import { DeliveryFixture, makeEvent, newSecret } from './delivery-fixture.ts';

const EXAMPLES = fileURLToPath(new URL('../../../examples/webhook-verification/', import.meta.url));

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a program to its end, with `env` over this process's environment less any WEBHOOK_SECRET;
 * a program that is missing or killed by a signal rejects.
 */
function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<RunResult> {
  const { WEBHOOK_SECRET: _inherited, ...inherited } = process.env;
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: { ...inherited, ...env } }, (error, stdout, stderr) => {
      if (error === null) return resolve({ code: 0, stdout, stderr });
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'number') resolve({ code, stdout, stderr });
      else reject(error);
    });
  });
}

/** Fails, with how to install it, when a toolchain the snippets need is not on this machine. */
async function requireTool(command: string, args: string[], install: string): Promise<void> {
  try {
    await run(command, args);
  } catch (err) {
    throw new Error(`\`${command}\` is not installed (${(err as Error).message}): ${install}`, {
      cause: err,
    });
  }
}

interface Verifier {
  language: string;
  command: string;
  args: (headersFile: string, bodyFile: string) => string[];
}

/** The three snippets, compiled where they need it (warnings are errors). */
async function buildVerifiers(dir: string): Promise<Verifier[]> {
  const apt = (packages: string) =>
    `apt-get install -y --no-install-recommends ${packages} (as .ci/run does)`;
  await requireTool('python3', ['--version'], apt('python3'));
  await requireTool('javac', ['-version'], apt('openjdk-17-jdk-headless'));
  await requireTool('java', ['-version'], apt('openjdk-17-jdk-headless'));
  await requireTool('mcs', ['--version'], apt('mono-mcs mono-runtime'));
  await requireTool('mono', ['--version'], apt('mono-mcs mono-runtime'));
  const classes = join(dir, 'java');
  const exe = join(dir, 'VerifyWebhook.exe');
  const builds = await Promise.all([
    run('javac', [
      '-Xlint:all',
      '-Werror',
      '-d',
      classes,
      join(EXAMPLES, 'java', 'VerifyWebhook.java'),
    ]),
    run('mcs', ['-warnaserror+', `-out:${exe}`, join(EXAMPLES, 'csharp', 'VerifyWebhook.cs')]),
  ]);
  for (const build of builds) expect(build, build.stdout + build.stderr).toMatchObject({ code: 0 });
  return [
    {
      language: 'python',
      command: 'python3',
      args: (headers, body) => ['-B', join(EXAMPLES, 'python', 'verify_webhook.py'), headers, body],
    },
    {
      language: 'java',
      command: 'java',
      args: (headers, body) => ['-cp', classes, 'VerifyWebhook', headers, body],
    },
    { language: 'csharp', command: 'mono', args: (headers, body) => [exe, headers, body] },
  ];
}

/** One request to verify and what must come of it. */
interface Case {
  name: string;
  headers: Record<string, string>;
  body: string;
  /** WEBHOOK_SECRET; undefined leaves it unset. */
  secret: string | undefined;
  /** Exit status 0 (genuine), 1 (rejected, with the reason) or 2 (configuration). */
  exit: 0 | 1 | 2;
  output: RegExp;
}

/** The request head as a receiver logs it: the request line, then `Name: value` lines. */
const headFile = (headers: Record<string, string>) =>
  ['POST /hooks/concordance HTTP/1.1', ...Object.entries(headers).map(([n, v]) => `${n}: ${v}`)]
    .join('\r\n')
    .concat('\r\n');

/** What the TypeScript verification (the `standardwebhooks` library, as the receiver) says. */
function referenceAccepts(c: Case): boolean {
  if (c.secret === undefined) return false;
  try {
    new Webhook(c.secret).verify(c.body, c.headers);
    return true;
  } catch {
    return false;
  }
}

/**
 * The cases, from one real delivery: itself, then tampered, forged, stale, early, replayed with a
 * rewritten timestamp, and the forms of header and secret the scheme allows.
 */
function casesFrom(delivery: ReceivedAttempt, secret: string): Case[] {
  const headers = delivery.headers;
  const body = delivery.rawBody;
  const id = delivery.webhookId;
  const now = new Date();
  /** A signature of the real body by the reference library, at `seconds` from now. */
  const signedAt = (seconds: number, key = secret) => {
    const at = new Date(now.getTime() + seconds * 1_000);
    return {
      ...headers,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1_000)),
      'webhook-signature': new Webhook(key).sign(id, at, body),
    };
  };
  const genuine = headers['webhook-signature'] ?? '';
  const { 'webhook-signature': _signature, ...unsigned } = headers;
  // A secret whose base64 has padding (25 bytes), to try it without its padding and prefix.
  const padded = `whsec_${randomBytes(25).toString('base64')}`;
  const tampered = body.replace('"changed":true', '"changed":false');
  if (tampered === body) throw new Error('the delivery has no "changed":true to tamper with');
  const ok = new RegExp(`^OK ${id}\\s*$`);
  const rejected = (reason: string) => new RegExp(`^REJECTED: ${reason}`);
  return [
    { name: 'the real delivery', headers, body, secret, exit: 0, output: ok },
    {
      name: 'header names in another case',
      headers: Object.fromEntries(
        Object.entries(headers).map(([n, v]) => [n.replace(/(^|-)\w/g, (s) => s.toUpperCase()), v]),
      ),
      body,
      secret,
      exit: 0,
      output: ok,
    },
    {
      name: 'a tampered body',
      headers,
      body: tampered,
      secret,
      exit: 1,
      output: rejected('no matching signature'),
    },
    {
      name: 'a body with one more byte',
      headers,
      body: `${body}\n`,
      secret,
      exit: 1,
      output: rejected('no matching signature'),
    },
    {
      name: 'a wrong secret',
      headers,
      body,
      secret: newSecret(),
      exit: 1,
      output: rejected('no matching signature'),
    },
    {
      name: 'a replay with a rewritten timestamp',
      headers: {
        ...headers,
        'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1),
      },
      body,
      secret,
      exit: 1,
      output: rejected('no matching signature'),
    },
    {
      name: 'a stale timestamp (signed 10 minutes ago)',
      headers: signedAt(-600),
      body,
      secret,
      exit: 1,
      output: rejected('timestamp too old'),
    },
    {
      name: 'a timestamp 10 minutes ahead',
      headers: signedAt(600),
      body,
      secret,
      exit: 1,
      output: rejected('timestamp too new'),
    },
    {
      name: 'no signature header',
      headers: unsigned,
      body,
      secret,
      exit: 1,
      output: rejected('missing required headers'),
    },
    {
      name: 'several signatures, one of them right',
      headers: { ...headers, 'webhook-signature': `v1,${'A'.repeat(43)}= ${genuine}` },
      body,
      secret,
      exit: 0,
      output: ok,
    },
    {
      name: 'the right signature under another version',
      headers: { ...headers, 'webhook-signature': genuine.replace(/^v1,/, 'v2,') },
      body,
      secret,
      exit: 1,
      output: rejected('no matching signature'),
    },
    ...[padded, padded.replace(/=+$/, ''), padded.replace(/^whsec_/, '')].map((form): Case => ({
      name: `a secret written ${form === padded ? 'with its padding' : form.startsWith('whsec_') ? 'without its padding' : 'without its prefix'}`,
      headers: signedAt(0, padded),
      body,
      secret: form,
      exit: 0,
      output: ok,
    })),
    {
      name: 'no WEBHOOK_SECRET',
      headers,
      body,
      secret: undefined,
      exit: 2,
      output: /WEBHOOK_SECRET is not set/,
    },
  ];
}

/**
 * The verification snippets of docs/webhook-verification.md (Python 3, Java 17, C# on Mono) against
 * a real signed delivery: the delivery router and the webhook worker, built by the composition
 * root, sign and POST a result event to the receiver; its headers and raw body go to files, and
 * each snippet must accept exactly what the TypeScript verification accepts.
 */
describe('the webhook verification snippets', () => {
  let dir: string;
  let verifiers: Verifier[];
  let fixture: DeliveryFixture | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cw-verify-'));
    verifiers = await buildVerifiers(dir);
  });
  afterAll(async () => {
    await fixture?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('accept a real delivery and refuse it tampered, forged, stale or early, as the TypeScript verifier does', async () => {
    const f = (fixture = await DeliveryFixture.start());
    // Text beyond ASCII: the signature covers the body's UTF-8 bytes.
    const event = makeEvent({
      concordance: { concordant: true, note: 'Zoë — 5 µg/L, “quoted”, \u2028, 🩺' },
    });
    await f.deliver(event);
    await f.untilReceived(event.id);
    const [delivery] = f.attemptsOf(event.id);
    if (delivery === undefined) throw new Error('no delivery');
    expect(delivery.verified).toBe(true);

    const cases = casesFrom(delivery, f.secret);
    for (const [i, c] of cases.entries()) {
      expect(referenceAccepts(c), `reference verdict on ${c.name}`).toBe(c.exit === 0);
      const caseDir = join(dir, `case-${i}`);
      mkdirSync(caseDir);
      const headersFile = join(caseDir, 'headers.txt');
      const bodyFile = join(caseDir, 'body.json');
      writeFileSync(headersFile, headFile(c.headers));
      writeFileSync(bodyFile, c.body);
      const env: Record<string, string> =
        c.secret === undefined ? {} : { WEBHOOK_SECRET: c.secret };
      const results = await Promise.all(
        verifiers.map(async (v) => ({
          language: v.language,
          ...(await run(v.command, v.args(headersFile, bodyFile), env)),
        })),
      );
      for (const { language, code, stdout, stderr } of results) {
        const what = `${language} on ${c.name}: ${stdout}${stderr}`;
        expect(code, what).toBe(c.exit);
        expect(c.exit === 0 ? stdout : stderr, what).toMatch(c.output);
      }
    }
  });
});
