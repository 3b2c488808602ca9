import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/** The `iss` of the bench's EHR (the one CDS client of the `cds_hooks` scenario's child). */
export const BENCH_EHR_ISSUER = 'https://ehr.bench.example.test';
/** The identifier system whose value is a Patient's local id (`MRN_FHIR_SYSTEMS`). */
export const BENCH_MRN_SYSTEM = 'urn:oid:2.16.840.1.113883.19.5.99999';

/**
 * The EHR side of the `cds_hooks` scenario: an ES384 key pair made in the bench process, whose
 * public JWK goes inline into the child's `cds_hooks.clients`, and the CDS Hooks JWTs it signs
 * (CDS Hooks 2.0, "Trusting CDS Clients"): `iss`, `aud` (the service URL), `iat`, `exp` two
 * minutes on, and a new `jti` each.
 */
export class BenchEhr {
  readonly jwk: JWK;
  readonly #privateKey: CryptoKey;
  readonly #kid: string;
  readonly #audience: string;
  /** Tokens signed so far and the time it took (ms, wall clock of the bench process). */
  signed = 0;
  signMs = 0;

  private constructor(privateKey: CryptoKey, jwk: JWK, kid: string, audience: string) {
    this.#privateKey = privateKey;
    this.jwk = jwk;
    this.#kid = kid;
    this.#audience = audience;
  }

  /** A new key pair; `audience` is the URL of the service called (`<base>/cds-services/<id>`). */
  static async create(audience: string): Promise<BenchEhr> {
    const kid = `bench-${randomUUID()}`;
    const { privateKey, publicKey } = await generateKeyPair('ES384');
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES384', use: 'sig' };
    return new BenchEhr(privateKey, jwk, kid, audience);
  }

  /** One fresh JWT (a new `jti`). */
  async sign(): Promise<string> {
    const started = performance.now();
    const now = Math.floor(Date.now() / 1_000);
    const token = await new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES384', kid: this.#kid, typ: 'JWT' })
      .setIssuer(BENCH_EHR_ISSUER)
      .setAudience(this.#audience)
      .setIssuedAt(now)
      .setExpirationTime(now + 120)
      .sign(this.#privateKey);
    this.signMs += performance.now() - started;
    this.signed += 1;
    return token;
  }

  /** `count` fresh JWTs, signed now (one after the other). */
  async signAhead(count: number): Promise<string[]> {
    const tokens = new Array<string>(count);
    for (let i = 0; i < count; i++) tokens[i] = await this.sign();
    return tokens;
  }
}

/**
 * The `patient-view` request body of the patient whose FHIR logical id is `fhirId` and whose MRN
 * (its local id here) is `mrn`, with the Patient prefetched as the discovery answer asks.
 */
export function patientViewBody(fhirId: string, mrn: string): string {
  return JSON.stringify({
    hook: 'patient-view',
    hookInstance: randomUUID(),
    fhirServer: 'https://ehr.bench.example.test/fhir',
    context: { userId: 'Practitioner/bench', patientId: fhirId },
    prefetch: {
      patient: {
        resourceType: 'Patient',
        id: fhirId,
        identifier: [{ system: BENCH_MRN_SYSTEM, value: mrn }],
        gender: 'female',
        birthDate: '1962-03-14',
      },
    },
  });
}
