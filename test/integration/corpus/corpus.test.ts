// The whole public corpus (test/corpus/, sources in SOURCES.md) through the real listeners, each
// item against its expected answer and effect (expectations.json): issue 9, Done-when 1.
import { describe, expect, it } from 'vitest';
import {
  asVariant,
  assertExpected,
  corpusBytes,
  loadCorpus,
  runItem,
} from './support/corpus-runner.ts';

const corpus = loadCorpus();

/** The first MSH segment of an HL7 file (read as Latin-1: the header is ASCII in every set). */
function mshOf(bytes: Buffer): string {
  const text = bytes.toString('latin1').replace(/^\xEF\xBB\xBF/, '');
  return text.split(/\r\n|\r|\n/).find((s) => s.startsWith('MSH')) ?? '';
}

describe('the public corpus through the real listeners (issue 9)', () => {
  it('covers what issue 9 asks for', () => {
    const versions = new Set(corpus.map((i) => i.version).filter(Boolean));
    // Each HL7 item's version is its file's MSH-12 (a batch: its first message's).
    for (const item of corpus.filter((i) => i.file.startsWith('hl7v2/'))) {
      const msh = mshOf(corpusBytes(item.file));
      expect(msh.split(msh.charAt(3))[11]?.split('^')[0], `${item.file} MSH-12`).toBe(item.version);
    }
    for (const v of ['2.2', '2.3', '2.4', '2.5', '2.6', '2.7', '2.8']) {
      expect(
        [...versions].some((have) => have === v || have?.startsWith(`${v}.`)),
        `an HL7 v${v} message`,
      ).toBe(true);
    }
    const tags = new Set(corpus.flatMap((i) => i.tags));
    for (const tag of [
      'bare-pid3',
      'batch',
      'non-ascii',
      // An HL7 v2 message whose patient name is not ASCII.
      'non-ascii-hl7',
      'synthea',
      'fhir-spec',
      // Examples of the FHIR core specification itself (not only of an IG such as US Core).
      'fhir-core-spec',
      'id-only-notification',
    ]) {
      expect(tags.has(tag), `an item tagged ${tag}`).toBe(true);
    }
    // A non-ASCII HL7 name is a byte above 0x7F in PID-5 of the file.
    for (const item of corpus.filter((i) => i.tags.includes('non-ascii-hl7'))) {
      const bytes = corpusBytes(item.file);
      const pid = bytes.indexOf('\nPID|') + 1 || bytes.indexOf('\rPID|') + 1;
      const name = bytes.subarray(pid).toString('latin1').split('|')[5] ?? '';
      expect(/[\x80-\xff]/.test(name), `${item.file} PID-5 is not ASCII`).toBe(true);
    }
  });

  for (const item of corpus) {
    const needs = item.needs.length === 0 ? '' : ` [needs ${item.needs.join(', ')}]`;
    it(`${item.file} over ${item.channel}${needs}`, async () => {
      assertExpected(item, await runItem(item, corpus));
    });
    for (const variant of item.variants ?? []) {
      const sent = asVariant(item, variant);
      it(`${item.file} over ${sent.channel}, ${variant.name}${needs}`, async () => {
        assertExpected(sent, await runItem(item, corpus, variant));
      });
    }
  }
});
