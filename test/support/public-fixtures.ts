/**
 * Public sample messages and resources written by other projects (HL7 v2 from microsoft/FHIR-Converter,
 * Synthea bundles, US Core and Subscriptions backport examples), byte for byte, with their sources in
 * `test/fixtures/public/SOURCES.md`: in the repository, so that a plain clone passes `npm test`.
 */
export const PUBLIC_FIXTURES = new URL('../fixtures/public/', import.meta.url).pathname;
