import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  TOKEN,
  controlIdOf,
  fixture,
  startHl7v2Harness,
  type Hl7v2Harness,
} from '../hl7v2/support/hl7v2-harness.ts';
import {
  HttpSenderProperties,
  TcpSenderProperties,
  destination,
  encodedData,
  httpSenderStatus,
  isBinaryForMirth,
  loadChannel,
  runDeployScript,
  sendLikeHttpSender,
  sendLikeTcpSender,
  tcpSenderStatus,
} from './support/mirth-channel.ts';

/**
 * The channel's two destinations against the real ingest (the MLLP server and the HL7 v2 route of
 * the ingest app, on real Redis): each message is framed, addressed, authorised and typed exactly
 * as the parsed channel export says, and its answer is judged as Mirth judges it.
 */
const channel = loadChannel();
const mllp = destination(channel, 'com.mirth.connect.connectors.tcp.TcpDispatcherProperties');
const http = destination(channel, 'com.mirth.connect.connectors.http.HttpDispatcherProperties');
const tcpProps = TcpSenderProperties.parse(mllp.properties);
const httpProps = HttpSenderProperties.parse(http.properties);

/** A public sample (microsoft/FHIR-Converter): ADT^A08, patient PATID1234 of authority test1. */
const SAMPLE = 'ADT-A08-01.hl7';
const SAMPLE_PATIENT = 'test1|PATID1234';
/** A message the sender must fix: its PID names no patient (AE, nothing changed). */
const NO_PATIENT =
  'MSH|^~\\&|EHR|HOSP|CW|HOSP|20260101120000||ADT^A08^ADT_A01|NOPID-1|P|2.5\rPID|1\r';

let h: Hl7v2Harness;
afterEach(async () => {
  await h.close();
});

/**
 * The Configuration Map a site sets, with this harness's addresses, and the variables the
 * destinations resolve against after the deploy script ran (the global channel map over it).
 */
async function variables(httpPort?: number): Promise<Record<string, string>> {
  const configurationMap: Record<string, string> = {
    cw_ingest_host: '127.0.0.1',
    cw_mllp_port: String(h.mllp.port),
    cw_ingest_token: TOKEN,
    ...(httpPort === undefined ? {} : { cw_http_port: String(httpPort) }),
  };
  const { globalChannelMap } = runDeployScript(channel, configurationMap);
  return { ...configurationMap, ...globalChannelMap };
}

/** The ACK is AA for the message's MSH-10, and the sample patient's record holds its DG1. */
async function expectAaAndStored(ack: string | undefined, controlId: string): Promise<void> {
  expect(ack?.split('\r').find((s) => s.startsWith('MSA|'))).toBe(`MSA|AA|${controlId}`);
  expect((await h.clinicalOf(SAMPLE_PATIENT))?.clinical?.items).toHaveProperty(
    'hl7:dg1:snomed:422504002',
  );
}

async function listen(): Promise<number> {
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  return (h.app.server.address() as AddressInfo).port;
}

describe('the MLLP destination (TCP Sender)', () => {
  it('sends the public sample framed as configured, gets AA with MSA-2 = MSH-10: SENT, record updated', async () => {
    h = await startHl7v2Harness();
    const message = encodedData(mllp, fixture(SAMPLE));
    const ack = await sendLikeTcpSender(tcpProps, await variables(), message);
    await expectAaAndStored(ack, controlIdOf(message));
    expect(tcpSenderStatus(mllp, tcpProps, ack, controlIdOf(message))).toBe('SENT');
  });

  it('a message to fix is answered AE: an ERROR in Mirth, not resent; nothing stored', async () => {
    h = await startHl7v2Harness();
    const ack = await sendLikeTcpSender(tcpProps, await variables(), NO_PATIENT);
    expect(ack).toMatch(/\rMSA\|AE\|NOPID-1/);
    expect(tcpSenderStatus(mllp, tcpProps, ack, 'NOPID-1')).toBe('ERROR');
    expect(await h.inspect.keys(`${h.prefix}:xw*`)).toEqual([]);
  });

  it('a message not stored (Redis unreachable) gets no ACK: QUEUED, resent later', async () => {
    h = await startHl7v2Harness({ redisDown: true });
    const message = encodedData(mllp, fixture(SAMPLE));
    const ack = await sendLikeTcpSender(tcpProps, await variables(), message);
    expect(ack).toBeUndefined();
    expect(tcpSenderStatus(mllp, tcpProps, ack, controlIdOf(message))).toBe('QUEUED');
  });
});

describe('the HTTP destination (HTTP Sender)', () => {
  it('posts the public sample with the configured headers and content type, gets AA: SENT, record updated', async () => {
    h = await startHl7v2Harness();
    const message = encodedData(http, fixture(SAMPLE));
    const answer = await sendLikeHttpSender(httpProps, await variables(await listen()), message);
    expect(answer.status).toBe(200);
    // Read as text by the HTTP Sender (a binary answer would reach the validator as Base64).
    expect(isBinaryForMirth(httpProps, answer.contentType)).toBe(false);
    await expectAaAndStored(answer.body, controlIdOf(message));
    expect(httpSenderStatus(http, httpProps, answer, controlIdOf(message))).toBe('SENT');
  });

  it('without the Configuration Map token the route refuses (401): QUEUED until it is set', async () => {
    h = await startHl7v2Harness();
    const { cw_ingest_token: _token, ...withoutToken } = await variables(await listen());
    const message = encodedData(http, fixture(SAMPLE));
    const answer = await sendLikeHttpSender(httpProps, withoutToken, message);
    expect(answer.status).toBe(401);
    expect(httpSenderStatus(http, httpProps, answer, controlIdOf(message))).toBe('QUEUED');
    expect(await h.clinicalOf(SAMPLE_PATIENT)).toBeUndefined();
  });

  it('a message to fix is answered AE: an ERROR in Mirth, not resent', async () => {
    h = await startHl7v2Harness();
    const answer = await sendLikeHttpSender(httpProps, await variables(await listen()), NO_PATIENT);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatch(/\rMSA\|AE\|NOPID-1/);
    expect(httpSenderStatus(http, httpProps, answer, 'NOPID-1')).toBe('ERROR');
  });

  it('a message not stored (Redis unreachable) is answered 503: QUEUED, resent later', async () => {
    h = await startHl7v2Harness({ redisDown: true });
    const message = encodedData(http, fixture(SAMPLE));
    const answer = await sendLikeHttpSender(httpProps, await variables(await listen()), message);
    expect(answer.status).toBe(503);
    expect(httpSenderStatus(http, httpProps, answer, controlIdOf(message))).toBe('QUEUED');
  });
});
