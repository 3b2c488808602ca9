import { describe, expect, it } from 'vitest';
import { PatientIdentityFacetsSchema } from './clinical-record.ts';
import { knownIdentifiers } from './known-identifiers.ts';

const facets = (fields: Record<string, unknown>) => PatientIdentityFacetsSchema.parse(fields);

describe('knownIdentifiers', () => {
  it('lists the local id and each identifier, lower-cased', () => {
    const ids = knownIdentifiers('LOCAL-77', facets({ identifiers: ['MRN12345', 'ACCT-9'] }));
    expect(ids).toEqual(['local-77', 'mrn12345', 'acct-9']);
  });

  it('adds the digits of a punctuated identifier of 7+ digits (an SSN)', () => {
    const ids = knownIdentifiers('x1', facets({ identifiers: ['123-45-6789', '12-34'] }));
    expect(ids).toContain('123-45-6789');
    expect(ids).toContain('123456789');
    expect(ids).not.toContain('1234');
  });

  it('lists each name and each name part of 3+ characters', () => {
    const ids = knownIdentifiers(
      'x1',
      facets({ names: ['Doe^Jane^Q^^Dr', 'Jane  Doe', "O'Brien, Li"] }),
    );
    expect(ids).toEqual([
      'x1',
      'doe^jane^q^^dr',
      'doe',
      'jane',
      'jane  doe',
      "o'brien, li",
      "o'brien",
    ]);
    expect(ids).not.toContain('q');
    expect(ids).not.toContain('li');
    expect(ids).not.toContain('dr');
  });

  it('lists the birth date in four forms when the full date is known', () => {
    expect(knownIdentifiers('x1', facets({ birthDate: '1957-08-19' }))).toEqual([
      'x1',
      '1957-08-19',
      '19570819',
      '08/19/1957',
      '19/08/1957',
    ]);
    expect(knownIdentifiers('x1', facets({ birthDate: '19570819' }))).toContain('08/19/1957');
    expect(knownIdentifiers('x1', facets({ birthDate: '1957' }))).toEqual(['x1']);
  });

  it('lists each phone as given and as its digits (7+), each email', () => {
    const ids = knownIdentifiers(
      'x1',
      facets({
        phones: ['(555) 867-5309', '+1 555 123 4567', 'x12'],
        emails: ['Jane@Example.org'],
      }),
    );
    expect(ids).toEqual([
      'x1',
      'jane@example.org',
      '(555) 867-5309',
      '5558675309',
      '+1 555 123 4567',
      '15551234567',
      'x12',
    ]);
  });

  it('lists each address part of 5+ characters', () => {
    const ids = knownIdentifiers(
      'x1',
      facets({ addresses: ['42 Elm Street^Apt 5^Springfield^IL^62701^USA', 'Flat 2, Mill Lane'] }),
    );
    expect(ids).toEqual([
      'x1',
      '42 elm street',
      'apt 5',
      'springfield',
      '62701',
      'flat 2',
      'mill lane',
    ]);
  });

  it('drops empties and duplicates', () => {
    const ids = knownIdentifiers(
      'MRN1',
      facets({ identifiers: ['mrn1', ' ', ''], names: ['  '], emails: ['A@b.c', 'a@B.c'] }),
    );
    expect(ids).toEqual(['mrn1', 'a@b.c']);
  });
});
