import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkCredential,
  checkKeyBytes,
  checkSecretKey,
  checkToken,
  checkWebhookSecret,
  decodeKeyText,
} from './secret-strength.ts';

const b64 = (bytes: Buffer) => bytes.toString('base64');
const whsec = (bytes: Buffer) => `whsec_${b64(bytes)}`;

describe('checkSecretKey', () => {
  it('accepts 32 random bytes in base64 and in hex', () => {
    expect(checkSecretKey('CROSSWALK_KEY', b64(randomBytes(32)))).toEqual([]);
    expect(checkSecretKey('CROSSWALK_KEY', randomBytes(32).toString('hex'))).toEqual([]);
    expect(checkSecretKey('CROSSWALK_KEY', randomBytes(48).toString('base64url'))).toEqual([]);
  });

  it('accepts any random key of 32 bytes or more', () => {
    fc.assert(
      fc.property(fc.integer({ min: 32, max: 96 }), (n) => {
        expect(checkSecretKey('K', b64(randomBytes(n)))).toEqual([]);
      }),
      { numRuns: 2_000 },
    );
  });

  it.each([
    ['32 zero bytes', b64(Buffer.alloc(32))],
    ['32 bytes of 0xff in hex', 'ff'.repeat(32)],
    ['31 random bytes', b64(randomBytes(31))],
    ['a counting sequence', b64(Buffer.from(Array.from({ length: 32 }, (_, i) => i)))],
    ['a short pattern repeated', b64(Buffer.from('abcd'.repeat(8)))],
    ['an 8-byte pattern in hex', '0123456789abcdef'.repeat(4)],
    [
      'few distinct bytes',
      b64(Buffer.from(Array.from({ length: 32 }, (_, i) => [1, 2, 3][i % 5] ?? 9))),
    ],
    ['not base64', 'this is not base64!'],
  ])('refuses %s', (_label, value) => {
    const problems = checkSecretKey('CROSSWALK_KEY', value);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('CROSSWALK_KEY');
    expect(problems[0]).toContain('openssl rand -base64 32');
  });

  it('never repeats the value in its message', () => {
    const value = b64(Buffer.from('z'.repeat(40)));
    expect(checkSecretKey('K', value).join(' ')).not.toContain(value);
  });

  it('honours minBytes for other keys', () => {
    expect(checkKeyBytes('K', randomBytes(24), { minBytes: 24 })).toEqual([]);
    expect(checkKeyBytes('K', randomBytes(23), { minBytes: 24 })[0]).toMatch(/23 bytes/);
  });
});

describe('decodeKeyText', () => {
  it('reads hex of 64+ digits as hex, anything else as strict base64', () => {
    expect(decodeKeyText('ab'.repeat(32))).toEqual(Buffer.alloc(32, 0xab));
    expect(decodeKeyText('AAEC')).toEqual(Buffer.from([0, 1, 2]));
    expect(decodeKeyText('AAE')).toEqual(Buffer.from([0, 1]));
    expect(decodeKeyText('not base64!')).toBeUndefined();
    expect(decodeKeyText('')).toBeUndefined();
  });
});

describe('checkWebhookSecret', () => {
  it('accepts whsec_ + base64 of 24 or more random bytes', () => {
    expect(checkWebhookSecret('WEBHOOK_SECRET', whsec(randomBytes(24)))).toEqual([]);
    expect(checkWebhookSecret('WEBHOOK_SECRET', whsec(randomBytes(32)))).toEqual([]);
  });

  it.each([
    ['12 zero bytes', whsec(Buffer.alloc(12))],
    ['24 zero bytes', whsec(Buffer.alloc(24))],
    ['18 random bytes', whsec(randomBytes(18))],
    ['no whsec_ prefix', b64(randomBytes(32))],
    ['the Standard Webhooks example', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
  ])('refuses %s', (_label, value) => {
    const problems = checkWebhookSecret('WEBHOOK_SECRET', value);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('whsec_$(openssl rand -base64 32)');
  });
});

describe('checkToken', () => {
  it('accepts generated tokens and the realistic ones the tests use', () => {
    expect(checkToken('T', randomBytes(24).toString('base64'))).toEqual([]);
    expect(checkToken('T', randomBytes(16).toString('hex'))).toEqual([]);
    expect(checkToken('T', 'ingest-test-token-0123456789')).toEqual([]);
  });

  it.each([
    ['16 × "a"', 'a'.repeat(16)],
    ['15 characters', 'k7Qp2xVb9LmN3rT'],
    ['two characters alternating', 'ab'.repeat(10)],
    ['four distinct characters', 'abcdabcddcbaabcd'],
    ['a short pattern repeated', 'xyz1'.repeat(5)],
    ['the alphabet', 'abcdefghijklmnopqrst'],
    ['hex digits in order', '0123456789abcdef'],
    ['a placeholder', 'change-me-please-token'],
    ['the README sample of old', 'change-me-engine-token-1'],
    ['a template', '<your ingest token here>'],
  ])('refuses %s', (_label, value) => {
    expect(checkToken('INGEST_TOKENS', value)).toHaveLength(1);
  });
});

describe('checkCredential', () => {
  it('accepts an opaque key of any form', () => {
    expect(checkCredential('SERVICE_API_KEY', 'cli-key')).toEqual([]);
    expect(checkCredential('SERVICE_API_KEY', randomBytes(20).toString('hex'))).toEqual([]);
  });

  it.each([
    ['empty', '  '],
    ['one character', 'k'],
    ['one character repeated', 'xxxxxxxx'],
    ['a placeholder', 'CHANGE_ME'],
    ['a word', 'secret'],
    ['a template', '${API_KEY}'],
    ['a run', '12345678'],
  ])('refuses %s', (_label, value) => {
    expect(checkCredential('SERVICE_API_KEY', value)).toHaveLength(1);
  });

  it('refuses the extra samples it is given', () => {
    expect(checkCredential('SERVICE_API_KEY', 'local-dev-key', ['local-dev-key'])).toHaveLength(1);
    expect(checkCredential('SERVICE_API_KEY', 'local-dev-key')).toEqual([]);
  });
});
