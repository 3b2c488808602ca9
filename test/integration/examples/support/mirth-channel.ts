import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { connect } from 'node:net';
import { runInNewContext } from 'node:vm';
import { XMLParser } from 'fast-xml-parser';
import { z } from 'zod';

/**
 * The Mirth Connect channel export of examples/mirth, read as Mirth reads it (the XML its
 * channel export writes: XStream's serialization of `com.mirth.connect.model.Channel`), and the
 * parts of Mirth's behaviour the examples depend on, as Mirth Connect's source has them
 * (nextgenhealthcare/connect 4.5: TcpDispatcher, HttpDispatcher, HL7v2ResponseValidator,
 * TemplateValueReplacer): what a destination sends, and whether an answer leaves the message
 * SENT, ERROR or QUEUED. Mirth itself cannot run here; see examples/mirth/SOURCES.md.
 */
export const CHANNEL_FILE = new URL(
  '../../../../examples/mirth/concordance-worker-channel.xml',
  import.meta.url,
);

const Text = z.string();
const Bool = z.enum(['true', 'false']).transform((v) => v === 'true');

const DataTypeProperties = z.looseObject({
  '@_class': z.literal('com.mirth.connect.plugins.datatypes.hl7v2.HL7v2DataTypeProperties'),
  serializationProperties: z.looseObject({ segmentDelimiter: Text, convertLineBreaks: Bool }),
  responseValidationProperties: z.looseObject({
    successfulACKCode: Text,
    errorACKCode: Text,
    rejectedACKCode: Text,
    validateMessageControlId: Bool,
    originalMessageControlId: Text,
  }),
});

const Transformer = z.looseObject({
  inboundDataType: z.literal('HL7V2'),
  outboundDataType: z.literal('HL7V2'),
  inboundProperties: DataTypeProperties,
  outboundProperties: DataTypeProperties,
});

const DestinationSettings = z.looseObject({
  queueEnabled: Bool,
  sendFirst: Bool,
  retryIntervalMillis: Text,
  retryCount: Text,
  rotate: Bool,
  threadCount: Text,
  validateResponse: Bool,
});

const Connector = z.looseObject({
  metaDataId: Text,
  name: Text,
  transportName: Text,
  mode: z.enum(['SOURCE', 'DESTINATION']),
  enabled: Bool,
  // As written: each destination's properties are read by their class's schema below.
  properties: z.looseObject({ '@_class': Text }),
  transformer: Transformer,
  responseTransformer: Transformer.optional(),
});

export const TcpSenderProperties = z.looseObject({
  '@_class': z.literal('com.mirth.connect.connectors.tcp.TcpDispatcherProperties'),
  destinationConnectorProperties: DestinationSettings,
  transmissionModeProperties: z.looseObject({
    '@_class': Text,
    pluginPointName: Text,
    startOfMessageBytes: Text,
    endOfMessageBytes: Text,
  }),
  serverMode: Bool,
  remoteAddress: Text,
  remotePort: Text,
  sendTimeout: Text,
  keepConnectionOpen: Bool,
  responseTimeout: Text,
  ignoreResponse: Bool,
  queueOnResponseTimeout: Bool,
  dataTypeBinary: Bool,
  charsetEncoding: Text,
  template: Text,
});
export type TcpSender = z.infer<typeof TcpSenderProperties>;

export const HttpSenderProperties = z.looseObject({
  '@_class': z.literal('com.mirth.connect.connectors.http.HttpDispatcherProperties'),
  destinationConnectorProperties: DestinationSettings,
  host: Text,
  method: Text,
  headers: z.looseObject({
    entry: z.array(z.looseObject({ string: Text, list: z.looseObject({ string: z.array(Text) }) })),
  }),
  useHeadersVariable: Bool,
  responseXmlBody: Bool,
  responseBinaryMimeTypes: Text,
  responseBinaryMimeTypesRegex: Bool,
  multipart: Bool,
  useAuthentication: Bool,
  password: Text,
  content: Text,
  contentType: Text,
  dataTypeBinary: Bool,
  charset: Text,
});
export type HttpSender = z.infer<typeof HttpSenderProperties>;

const ChannelSchema = z.looseObject({
  channel: z.looseObject({
    '@_version': Text,
    id: Text,
    name: Text,
    sourceConnector: Connector,
    destinationConnectors: z.looseObject({ connector: z.array(Connector) }),
    deployScript: Text,
    properties: z.looseObject({
      messageStorageMode: Text,
      encryptData: Bool,
      removeContentOnCompletion: Bool,
    }),
  }),
});
export type MirthChannel = z.infer<typeof ChannelSchema>['channel'];
export type MirthConnector = MirthChannel['sourceConnector'];

/** Parses the channel export with fast-xml-parser; its shape is checked with zod. */
export function loadChannel(xml: string = readFileSync(CHANNEL_FILE, 'utf8')): MirthChannel {
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '@_',
    // Values stay text, as XStream reads them ('0B', '2575', 'true').
    parseTagValue: false,
    isArray: (_name, jpath) =>
      /(^|\.)(connector|entry)$/.test(String(jpath)) || String(jpath).endsWith('.list.string'),
  });
  return ChannelSchema.parse(parser.parse(xml)).channel;
}

/** The destination whose connector properties are of this class. */
export function destination(channel: MirthChannel, propertiesClass: string): MirthConnector {
  const found = channel.destinationConnectors.connector.filter(
    (c) => c.properties['@_class'] === propertiesClass,
  );
  if (found.length !== 1) throw new Error(`expected one ${propertiesClass} destination`);
  return found[0] as MirthConnector;
}

/** A destination's queue and response settings (DestinationConnectorProperties). */
export function settingsOf(connector: MirthConnector): z.infer<typeof DestinationSettings> {
  return DestinationSettings.parse(connector.properties.destinationConnectorProperties);
}

/** Hex text as Mirth stores frame bytes ('1C0D') to bytes. */
export function hexBytes(hex: string): Buffer {
  if (!/^([0-9A-Fa-f]{2})*$/.test(hex)) throw new Error(`not hex bytes: ${hex}`);
  return Buffer.from(hex, 'hex');
}

/** A data type's segment delimiter as Mirth stores it (`\r` written as backslash-r). */
function delimiter(stored: string): string {
  return stored.replace(/\\r/g, '\r').replace(/\\n/g, '\n');
}

/**
 * `${message.encodedData}` of a destination without transformer steps: the message serialized by
 * the outbound HL7 v2 data type, whose `convertLineBreaks` turns CRLF, LF and CR into the
 * segment delimiter (Mirth's StringUtil.convertLineBreaks).
 */
export function encodedData(connector: MirthConnector, raw: string): string {
  const out = connector.transformer.outboundProperties.serializationProperties;
  if (!out.convertLineBreaks) return raw;
  return raw.replace(/\r\n|\r|\n/g, delimiter(out.segmentDelimiter));
}

/** A `java.util.Map` as Mirth's scripts see the configuration map and the global channel map. */
class JavaMap {
  readonly entries = new Map<string, string>();
  constructor(initial: Record<string, string> = {}) {
    for (const [k, v] of Object.entries(initial)) this.entries.set(k, v);
  }
  containsKey(key: string): boolean {
    return this.entries.has(key);
  }
  get(key: string): string | null {
    return this.entries.get(key) ?? null;
  }
  put(key: string, value: unknown): void {
    this.entries.set(key, String(value));
  }
}

export interface DeployResult {
  globalChannelMap: Record<string, string>;
  warnings: string[];
}

/**
 * Runs the channel's deploy script as Mirth does (wrapped in a function, with `configurationMap`,
 * `globalChannelMap` and `logger` in scope). Throws what the script throws: a failed deploy.
 */
export function runDeployScript(
  channel: MirthChannel,
  configurationMap: Record<string, string>,
): DeployResult {
  const globalChannelMap = new JavaMap();
  const warnings: string[] = [];
  const logger = {
    warn: (m: unknown) => warnings.push(String(m)),
    info: () => undefined,
    error: (m: unknown) => warnings.push(String(m)),
  };
  runInNewContext(`(function () {\n${channel.deployScript}\n})();`, {
    configurationMap: new JavaMap(configurationMap),
    globalChannelMap,
    logger,
  });
  return { globalChannelMap: Object.fromEntries(globalChannelMap.entries), warnings };
}

/** The defaults the deploy script gives the Configuration Map keys it does not find. */
export function deployDefaults(channel: MirthChannel): Record<string, string> {
  const literal = /var CW_DEFAULTS = (\{[^}]*\});/.exec(channel.deployScript)?.[1];
  if (literal === undefined) throw new Error('the deploy script has no CW_DEFAULTS');
  return z.record(z.string(), z.string()).parse(JSON.parse(literal));
}

/**
 * Mirth's replacement of `${name}` in connector settings (TemplateValueReplacer: the configuration
 * map, then the global channel map over it). A name with no value stays as written, as in Velocity.
 */
export function replaceValues(template: string, variables: Record<string, string>): string {
  return template.replace(/\$\{([A-Za-z][A-Za-z0-9_.-]*)\}/g, (whole, name: string) =>
    Object.hasOwn(variables, name) ? (variables[name] as string) : whole,
  );
}

export type MirthStatus = 'SENT' | 'ERROR' | 'QUEUED';

/**
 * HL7v2ResponseValidator on an ER7 answer: AA/CA (and MSA-2 = the message's MSH-10 when
 * validateMessageControlId) is SENT, AE/CE or AR/CR is ERROR (not queued again), an empty answer
 * or one without MSA stays QUEUED.
 */
export function validateAck(
  connector: MirthConnector,
  ack: string | undefined,
  controlId: string,
): MirthStatus {
  const rt = connector.responseTransformer;
  if (rt === undefined) throw new Error('a destination without a response transformer');
  const { serializationProperties: ser, responseValidationProperties: val } = rt.inboundProperties;
  if (ack === undefined || ack.trim() === '') return 'QUEUED';
  const segment = delimiter(ser.segmentDelimiter);
  const data = ser.convertLineBreaks ? ack.replace(/\r\n|\r|\n/g, segment) : ack;
  const at = data.indexOf(`${segment}MSA`);
  if (at < 0) return 'QUEUED';
  const fieldSeparator = data.charAt(at + segment.length + 3);
  const msa = (data.slice(at + segment.length).split(segment)[0] ?? '').split(fieldSeparator);
  const code = msa[1] ?? '';
  const codes = (list: string) => list.split(',').filter((c) => c !== '');
  if ([...codes(val.rejectedACKCode), ...codes(val.errorACKCode)].some((c) => code.startsWith(c)))
    return 'ERROR';
  if (!codes(val.successfulACKCode).some((c) => code.startsWith(c))) return 'QUEUED';
  if (val.validateMessageControlId && (msa[2] ?? '') !== controlId) return 'ERROR';
  return 'SENT';
}

/** Donkey's last step: a QUEUED answer of a destination without a queue is an ERROR. */
function settle(connector: MirthConnector, status: MirthStatus): MirthStatus {
  return status === 'QUEUED' && !settingsOf(connector).queueEnabled ? 'ERROR' : status;
}

/**
 * A TCP Sender's send: the frame of its transmission mode around the message in its charset,
 * then the bytes up to the end bytes (the ACK), or undefined when the server closes first.
 */
export async function sendLikeTcpSender(
  props: TcpSender,
  variables: Record<string, string>,
  message: string,
): Promise<string | undefined> {
  const start = hexBytes(props.transmissionModeProperties.startOfMessageBytes);
  const end = hexBytes(props.transmissionModeProperties.endOfMessageBytes);
  const charset = props.charsetEncoding.toLowerCase() === 'utf-8' ? 'utf8' : 'latin1';
  const socket = connect(
    Number(replaceValues(props.remotePort, variables)),
    replaceValues(props.remoteAddress, variables),
  );
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const answer = new Promise<string | undefined>((resolve) => {
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const from = received.indexOf(start);
      const to = received.indexOf(end, from + 1);
      if (from >= 0 && to > from) resolve(received.subarray(from + 1, to).toString(charset));
    });
    socket.on('close', () => resolve(undefined));
  });
  const content = replaceValues(props.template, { ...variables, 'message.encodedData': message });
  socket.write(Buffer.concat([start, Buffer.from(content, charset), end]));
  const ack = await answer;
  socket.destroy();
  return ack;
}

/** What the TCP Sender's destination ends as, from what its send got back. */
export function tcpSenderStatus(
  connector: MirthConnector,
  props: TcpSender,
  ack: string | undefined,
  controlId: string,
): MirthStatus {
  if (props.ignoreResponse) return 'SENT';
  // The answer was read (or the connection ended without one): SENT, then validated.
  const status = props.destinationConnectorProperties.validateResponse
    ? validateAck(connector, ack, controlId)
    : 'SENT';
  return settle(connector, status);
}

export interface HttpAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** An HTTP Sender's request: method, URL, headers and content of its settings, resolved. */
export async function sendLikeHttpSender(
  props: HttpSender,
  variables: Record<string, string>,
  message: string,
): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  for (const entry of props.headers.entry) {
    headers[replaceValues(entry.string, variables)] = entry.list.string
      .map((v) => replaceValues(v, variables))
      .join(', ');
  }
  // The content type without a charset gets the connector's charset (HttpDispatcher).
  const contentType = props.contentType.includes('charset=')
    ? props.contentType
    : `${props.contentType}; charset=${props.charset}`;
  const response = await fetch(replaceValues(props.host, variables), {
    method: props.method.toUpperCase(),
    headers: { ...headers, 'content-type': contentType },
    body: Buffer.from(
      replaceValues(props.content, { ...variables, 'message.encodedData': message }),
    ),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    body: await response.text(),
  };
}

/** Whether the HTTP Sender reads an answer of this content type as binary (then Base64). */
export function isBinaryForMirth(props: HttpSender, contentType: string): boolean {
  const mime = (contentType.split(';')[0] ?? '').trim();
  if (!props.responseBinaryMimeTypesRegex) {
    return props.responseBinaryMimeTypes.split(',').some((t) => mime.startsWith(t.trim()));
  }
  return new RegExp(`^(?:${props.responseBinaryMimeTypes})$`).test(mime);
}

/** What the HTTP Sender's destination ends as, from the HTTP answer. */
export function httpSenderStatus(
  connector: MirthConnector,
  props: HttpSender,
  answer: HttpAnswer,
  controlId: string,
): MirthStatus {
  // 400 and above stay QUEUED (not validated); below is SENT, then validated.
  if (answer.status >= 400) return settle(connector, 'QUEUED');
  if (!props.destinationConnectorProperties.validateResponse) return 'SENT';
  const data = isBinaryForMirth(props, answer.contentType)
    ? Buffer.from(answer.body).toString('base64')
    : answer.body;
  return settle(connector, validateAck(connector, data, controlId));
}
