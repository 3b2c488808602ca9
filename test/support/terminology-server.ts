import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One `$translate` call the test server received. */
export interface TranslateCall {
  method: string;
  params: Record<string, string>;
  authorization: string | undefined;
}

export interface LocalTerminologyServer {
  /** The FHIR base URL (`…/fhir`). */
  baseUrl: string;
  calls: TranslateCall[];
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A small FHIR terminology server of ours: `GET|POST {base}/ConceptMap/$translate` with `system`,
 * `code` and `targetsystem` (or `target`), answered from `table` (`system|code` -> ICD-10-CM codes)
 * as a Parameters resource (`result`, one `match` per code). A code listed in `failing` gets a 500.
 */
export async function startTerminologyServer(options: {
  table: Record<string, string[]>;
  failing?: string[];
}): Promise<LocalTerminologyServer> {
  const calls: TranslateCall[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname !== '/fhir/ConceptMap/$translate') {
        res.writeHead(404).end();
        return;
      }
      let params: Record<string, string> = Object.fromEntries(url.searchParams);
      if (req.method === 'POST') {
        const parsed = JSON.parse(await body(req)) as {
          parameter: { name: string; valueUri?: string; valueCode?: string }[];
        };
        params = Object.fromEntries(
          parsed.parameter.map((p) => [p.name, p.valueUri ?? p.valueCode ?? '']),
        );
      }
      calls.push({ method: req.method ?? '', params, authorization: req.headers.authorization });
      const target = params.targetsystem ?? params.target;
      if (options.failing?.includes(params.code ?? '')) {
        res.writeHead(500).end('boom');
        return;
      }
      const codes =
        target === 'http://hl7.org/fhir/sid/icd-10-cm'
          ? (options.table[`${params.system}|${params.code}`] ?? [])
          : [];
      const answer = {
        resourceType: 'Parameters',
        parameter: [
          { name: 'result', valueBoolean: codes.length > 0 },
          ...codes.map((code) => ({
            name: 'match',
            part: [
              { name: 'equivalence', valueCode: 'equivalent' },
              {
                name: 'concept',
                valueCoding: { system: 'http://hl7.org/fhir/sid/icd-10-cm', code },
              },
            ],
          })),
        ],
      };
      res.writeHead(200, { 'content-type': 'application/fhir+json' }).end(JSON.stringify(answer));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/fhir`,
    calls,
    close: () =>
      new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      ),
  };
}
