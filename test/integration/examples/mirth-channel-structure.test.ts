import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { HL7V2_MEDIA_TYPES, HL7V2_ROUTE } from '../../../src/ingest/hl7v2/hl7v2-routes.ts';
import { frame } from '../hl7v2/support/hl7v2-harness.ts';
import {
  CHANNEL_FILE,
  HttpSenderProperties,
  TcpSenderProperties,
  deployDefaults,
  destination,
  hexBytes,
  loadChannel,
  replaceValues,
  runDeployScript,
  settingsOf,
} from './support/mirth-channel.ts';

const TCP = 'com.mirth.connect.connectors.tcp.TcpDispatcherProperties';
const HTTP = 'com.mirth.connect.connectors.http.HttpDispatcherProperties';

const channel = loadChannel();
const mllp = destination(channel, TCP);
const http = destination(channel, HTTP);
const tcpProps = TcpSenderProperties.parse(mllp.properties);
const httpProps = HttpSenderProperties.parse(http.properties);
/** The ingester's defaults (config/default.yaml), as a process without a --config file has them. */
const config = loadConfig({ env: {} });

describe('the Mirth Connect channel export (examples/mirth)', () => {
  it('is a channel export: a Channel Reader source and two destinations, one of them enabled', () => {
    expect(channel['@_version']).toMatch(/^4\.\d+\.\d+$/);
    expect(channel.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(channel.sourceConnector).toMatchObject({
      mode: 'SOURCE',
      transportName: 'Channel Reader',
      properties: { '@_class': 'com.mirth.connect.connectors.vm.VmReceiverProperties' },
    });
    expect(channel.destinationConnectors.connector.map((c) => c.transportName).sort()).toEqual([
      'HTTP Sender',
      'TCP Sender',
    ]);
    expect(channel.destinationConnectors.connector.filter((c) => c.enabled)).toHaveLength(1);
    for (const c of [channel.sourceConnector, mllp, http]) {
      expect(c.transformer.inboundDataType).toBe('HL7V2');
    }
  });

  it('frames MLLP as the ingester reads it: 0x0B, the message, 0x1C 0x0D', () => {
    expect(tcpProps.transmissionModeProperties).toMatchObject({
      '@_class': 'com.mirth.connect.plugins.mllpmode.MLLPModeProperties',
      pluginPointName: 'MLLP',
    });
    const start = hexBytes(tcpProps.transmissionModeProperties.startOfMessageBytes);
    const end = hexBytes(tcpProps.transmissionModeProperties.endOfMessageBytes);
    expect([...start]).toEqual([0x0b]);
    expect([...end]).toEqual([0x1c, 0x0d]);
    expect(Buffer.concat([start, Buffer.from('MSH|x'), end])).toEqual(frame('MSH|x'));
    expect(tcpProps.serverMode).toBe(false);
    expect(tcpProps.dataTypeBinary).toBe(false);
    expect(tcpProps.template).toBe('${message.encodedData}');
  });

  it('sends to the ingester defaults: MLLP port, HTTP port and the HL7 v2 route', () => {
    const defaults = deployDefaults(channel);
    expect(defaults.cw_mllp_port).toBe(String(config.hl7v2.mllp.port));
    expect(defaults.cw_http_port).toBe(String(config.ingest.port));
    expect(tcpProps.remoteAddress).toBe('${cw_ingest_host}');
    expect(tcpProps.remotePort).toBe('${cw_mllp_port}');
    expect(httpProps.host).toBe(
      `\${cw_http_scheme}://\${cw_ingest_host}:\${cw_http_port}${HL7V2_ROUTE}`,
    );
    const { globalChannelMap } = runDeployScript(channel, {
      cw_ingest_host: 'cw.hospital.example',
    });
    const url = new URL(replaceValues(httpProps.host, globalChannelMap));
    expect(url.pathname).toBe(HL7V2_ROUTE);
    expect(url.port).toBe(String(config.ingest.port));
    expect(httpProps.method).toBe('post');
  });

  it('posts a content type the HL7 v2 route accepts, in the charset the route decodes by default', () => {
    expect(HL7V2_MEDIA_TYPES).toContain(httpProps.contentType);
    expect(httpProps.dataTypeBinary).toBe(false);
    expect(httpProps.multipart).toBe(false);
    expect(httpProps.content).toBe('${message.encodedData}');
    expect(config.hl7v2.charset.http_default).toBe(`UNICODE ${httpProps.charset}`);
    expect(config.hl7v2.charset.mllp_default).toBe(`UNICODE ${tcpProps.charsetEncoding}`);
    // The ACK is read as text, never as a binary (Base64) answer.
    expect(httpProps.responseXmlBody).toBe(false);
  });

  it('takes the bearer token from a Configuration Map variable, never a literal', () => {
    const auth = httpProps.headers.entry.filter((e) => e.string === 'Authorization');
    expect(auth).toHaveLength(1);
    expect(auth[0]?.list.string).toEqual(['Bearer ${cw_ingest_token}']);
    expect(httpProps.useHeadersVariable).toBe(false);
    expect(httpProps.useAuthentication).toBe(false);
    expect(httpProps.password).toBe('');
    // The token is not given a value anywhere in the export (nor by the deploy script).
    const xml = readFileSync(CHANNEL_FILE, 'utf8');
    expect(xml.match(/Bearer [^<]*/g)).toEqual(['Bearer ${cw_ingest_token}']);
    expect(deployDefaults(channel)).not.toHaveProperty('cw_ingest_token');
    const { globalChannelMap } = runDeployScript(channel, {
      cw_ingest_host: 'h',
      cw_ingest_token: 's3',
    });
    expect(Object.values(globalChannelMap)).not.toContain('s3');
  });

  it('queues on failure and validates the ACK, in order, on both destinations', () => {
    for (const c of [mllp, http]) {
      const settings = settingsOf(c);
      // Queue "On Failure": sent at once, kept and resent on failure.
      expect(settings).toMatchObject({
        queueEnabled: true,
        sendFirst: true,
        validateResponse: true,
        // One queue thread, no rotation: a patient's updates reach the ingester in order.
        rotate: false,
        threadCount: '1',
      });
      expect(Number(settings.retryIntervalMillis)).toBeGreaterThan(0);
      expect(c.responseTransformer?.inboundProperties.responseValidationProperties).toMatchObject({
        successfulACKCode: 'AA,CA',
        errorACKCode: 'AE,CE',
        rejectedACKCode: 'AR,CR',
        validateMessageControlId: true,
        originalMessageControlId: 'Destination_Encoded',
        originalIdMapVariable: '',
      });
    }
  });

  it('waits for the ACK longer than the ingester may take, and closes idle connections first', () => {
    expect(tcpProps.ignoreResponse).toBe(false);
    expect(tcpProps.queueOnResponseTimeout).toBe(true);
    expect(Number(tcpProps.responseTimeout)).toBeGreaterThan(config.hl7v2.mllp.handling_timeout_ms);
    expect(tcpProps.keepConnectionOpen).toBe(true);
    expect(Number(tcpProps.sendTimeout)).toBeLessThan(config.hl7v2.mllp.idle_timeout_ms);
  });

  it('keeps message content encrypted in Mirth and removes it once sent', () => {
    expect(channel.properties).toMatchObject({
      messageStorageMode: 'PRODUCTION',
      encryptData: true,
      removeContentOnCompletion: true,
    });
  });

  describe('the deploy script', () => {
    it('refuses to deploy without cw_ingest_host', () => {
      expect(() => runDeployScript(channel, {})).toThrow(/cw_ingest_host/);
    });

    it('gives the defaults to the keys the Configuration Map lacks, and lets it override them', () => {
      const { globalChannelMap, warnings } = runDeployScript(channel, {
        cw_ingest_host: 'h',
        cw_mllp_port: '3575',
      });
      expect(globalChannelMap).toEqual({ ...deployDefaults(channel), cw_mllp_port: '3575' });
      expect(warnings.join(' ')).toMatch(/cw_ingest_token is not set/);
      expect(
        runDeployScript(channel, { cw_ingest_host: 'h', cw_ingest_token: 't' }).warnings,
      ).toEqual([]);
    });
  });
});
