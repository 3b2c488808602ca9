import type { Logger } from 'pino';
import type { Hl7v2Config } from '../../config/config-schema.ts';
import type { ClinicalUpdates } from '../clinical-updates.ts';
import type { FeedTrace } from '../feed-trace.ts';
import type { ReceiptOutcome } from '../../trace/receipt-writer.ts';
import { buildAck, type AckCode } from './ack.ts';
import { buildBatchAck, isBatch, splitBatch } from './batch.ts';
import { charsetNameOf, decodeMessage, isSupportedCharset } from './charset.ts';
import { UnsupportedCharsetError } from './unsupported-charset-error.ts';
import { Er7ParseError, parseEr7, type Er7Message } from './er7.ts';
import { Hl7v2DeadlineError } from './hl7v2-deadline-error.ts';
import type { Hl7v2Metrics, Hl7v2Outcome } from './hl7v2-metrics.ts';
import { skipLeadingNoise } from './leading-noise.ts';
import { headerOf, Hl7v2RejectError, mapMessage } from './map-message.ts';
import { refusalHeaderOf } from './refusal-header.ts';

/** What the HL7 v2 handler needs of the clinical updates (the lead's `ClinicalUpdates`). */
export type ClinicalUpdatesPort = Pick<ClinicalUpdates, 'apply' | 'merge'>;

/**
 * What an A23/A29 needs: the admin purge (`PatientAdmin.purge`), which removes the patient's record,
 * presets and queries and writes an audit entry naming the sender as actor. An unknown patient
 * rejects with `code: 'ERR_UNKNOWN_PATIENT'` (nothing to delete: AA).
 */
export interface PatientDeletePort {
  purge(localId: string, request: { actor: string }): Promise<unknown>;
}

export interface Hl7v2HandlerOptions {
  config: Hl7v2Config;
  updates: ClinicalUpdatesPort;
  /**
   * Deletes for A23/A29. Without it those messages are answered AE (nothing changed), so that a
   * delete is never acknowledged and lost. @defaultValue none
   */
  patients?: PatientDeletePort;
  metrics: Hl7v2Metrics;
  /** Only `{message_type, control_id, outcome, ack}` is ever logged: never the message or PID. */
  logger: Logger;
  /**
   * Who answers: over HTTP a transient failure is a 503 (no ACK); over MLLP it is no ACK (the
   * connection is closed) or an AR, as `config.transient_reply` says. The log names the ACK
   * actually sent (`ack: null` for none).
   * @defaultValue `'mllp'`
   */
  transport?: 'mllp' | 'http';
  /**
   * How long storing one message may take; past it the message is answered as a transient failure
   * (the sender resends it) and the late result is ignored. @defaultValue no limit
   */
  deadlineMs?: number;
  /**
   * The character set of a message whose MSH-18 is empty (the listener's default, an HL7 table 0211
   * name such as `8859/1` or an alias such as `windows-1252`). @defaultValue `'UNICODE UTF-8'`
   */
  defaultCharset?: string;
  /**
   * The feed's counters and message receipts (docs/message-trace.md).
   * @defaultValue none: nothing is counted or traced
   */
  trace?: FeedTrace | undefined;
}

/** What the trace knows of one message on its way (see `Hl7v2Handler.#trace`). */
interface Traced {
  /** The message as received (sealed into its receipt with `trace.keep_raw`). */
  raw: string | Buffer;
  /** Set once it was stored: whether the commit recorded its receipt, and where it left. */
  stored?: {
    traced: boolean;
    state: ReceiptOutcome['state'];
    psid: string | null;
    version: number | null;
  };
}

/** `work()`, or a rejection with {@link Hl7v2DeadlineError} after `ms` (the work goes on). */
async function withDeadline<T>(work: Promise<T>, ms: number | undefined): Promise<T> {
  if (ms === undefined) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Hl7v2DeadlineError(ms)), ms);
  });
  // A result that comes after the deadline is ignored; so is a late failure.
  work.catch(() => undefined);
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Hl7v2Result {
  outcome: Hl7v2Outcome;
  /** MSA-1 of `ack`. */
  code: AckCode;
  /**
   * The ACK to send. For `unavailable` it is an AR, sent only when `transient_reply` is `AR` (MLLP);
   * otherwise the transport closes the connection (MLLP) or answers 503 (HTTP).
   */
  ack: string;
  /**
   * The iconv-lite encoding of `ack`, which its MSH-18 names: over MLLP the one the message was
   * read in (the batch's first message's, for a batch), over HTTP UTF-8.
   */
  encoding: string;
  /** False for an inbound ACK: nothing is sent back (answering it would start an ACK loop). */
  reply: boolean;
}

/** The answer to one MLLP frame or HTTP body: a message's ACK, or a batch's batch of ACKs. */
export interface Hl7v2Answer {
  /** `unavailable` when any message could not be stored: no ACK at all is sent then. */
  outcome: Hl7v2Outcome;
  ack: string;
  encoding: string;
  /** How many messages the input held (1 for a message, n for a batch). */
  messages: number;
  /** False when nothing is to be sent back (a single inbound ACK). */
  reply: boolean;
}

/**
 * Handles one ER7 message: parse, map to clinical changes, apply them, and build the ACK. AA only
 * once `apply`/`merge` resolved (the change is durable in Redis); AE/AR for a message the sender
 * must fix (nothing changed); `unavailable` for any failure of the updates (transient: resend).
 */
export class Hl7v2Handler {
  readonly #o: Hl7v2HandlerOptions;

  readonly #defaultCharset: string;

  constructor(options: Hl7v2HandlerOptions) {
    this.#o = options;
    this.#defaultCharset = options.defaultCharset ?? 'UNICODE UTF-8';
    if (!isSupportedCharset(this.#defaultCharset)) {
      throw new UnsupportedCharsetError(this.#defaultCharset);
    }
  }

  /**
   * One MLLP frame or HTTP body: a batch (FHS/BHS) or a single message. A batch's messages are
   * handled in order; when any of them cannot be stored (transient), the answer is `unavailable`
   * and no batch ACK is sent (the sender resends the batch; messages already stored commit nothing
   * new the second time). `transportCharset` (an HTTP `Content-Type` charset) wins over MSH-18.
   */
  async handleInput(input: Buffer, transportCharset?: string): Promise<Hl7v2Answer> {
    const bytes = skipLeadingNoise(input);
    if (!isBatch(bytes)) {
      const result = await this.handleBytes(bytes, transportCharset);
      return {
        outcome: result.outcome,
        ack: result.ack,
        encoding: result.encoding,
        messages: 1,
        reply: result.reply,
      };
    }
    const batch = splitBatch(bytes);
    const acks: string[][] = [];
    let encoding: string | undefined;
    let messages = 0;
    for (const input of batch.batches) {
      const answers: string[] = [];
      for (const message of input.messages) {
        // One batch of ACKs is sent in one character set: the first message's.
        const result = await this.handleBytes(message, transportCharset, encoding);
        messages += 1;
        if (result.outcome === 'unavailable') {
          this.#o.logger.info(
            { outcome: 'unavailable', transport: this.#o.transport ?? 'mllp', messages },
            'hl7v2 batch not acknowledged: resend it',
          );
          return {
            outcome: 'unavailable',
            ack: '',
            encoding: result.encoding,
            messages,
            reply: false,
          };
        }
        encoding ??= result.encoding;
        // An inbound ACK inside a batch gets no MSA of its own.
        if (result.reply) answers.push(result.ack);
      }
      acks.push(answers);
    }
    this.#o.logger.info(
      { outcome: 'accepted', transport: this.#o.transport ?? 'mllp', messages },
      'hl7v2 batch acknowledged',
    );
    return {
      outcome: 'accepted',
      ack: buildBatchAck(batch, acks),
      encoding: encoding ?? 'utf-8',
      messages,
      reply: true,
    };
  }

  /**
   * One message's raw bytes: decoded by `transportCharset`, else MSH-18, else the listener default.
   * A message whose bytes are not valid in that character set (or whose MSH-18 names one this
   * receiver does not support) is answered AE and changes nothing: decoding never replaces bytes
   * with U+FFFD, so two ids that differ in one letter never read alike. Leading blank lines,
   * spaces, stray VT bytes and a BOM are skipped. `ackEncoding` (MLLP: a batch's ACK character set)
   * wins over the message's own.
   */
  async handleBytes(
    input: Buffer,
    transportCharset?: string,
    ackEncoding?: string,
  ): Promise<Hl7v2Result> {
    const bytes = skipLeadingNoise(input);
    this.#o.trace?.received();
    const decoded = decodeMessage(bytes, this.#defaultCharset, transportCharset);
    if (decoded.ok) return this.#handle(decoded.text, decoded.encoding, ackEncoding);
    const traced: Traced = { raw: bytes };
    // The MSH line alone, read as Latin-1 (exact for its ASCII fields), so that the AE echoes MSH-10.
    const header = refusalHeaderOf(bytes.toString('latin1'));
    const encoding = this.#ackEncoding('iso-8859-1', ackEncoding);
    if (header.message === undefined) {
      return this.#finish(
        { controlId: header.controlId, encoding },
        'rejected',
        'AR',
        {
          code: '100',
          text: 'the message does not start with a readable MSH segment',
          location: 'MSH^1',
        },
        true,
        traced,
      );
    }
    const text =
      decoded.reason === 'unsupported'
        ? 'MSH-18 names a character set this receiver does not support'
        : 'the message holds bytes that are not valid in its character set (MSH-18 or the listener default)';
    return this.#finish(
      { message: header.message, encoding },
      'rejected',
      'AE',
      { code: '102', text, location: 'MSH^1^18' },
      true,
      traced,
    );
  }

  /** The encoding of an ACK: UTF-8 over HTTP; over MLLP `forced` (a batch's), else the message's. */
  #ackEncoding(messageEncoding: string, forced: string | undefined): string {
    if ((this.#o.transport ?? 'mllp') === 'http') return 'utf-8';
    return forced ?? messageEncoding;
  }

  /**
   * Counts, logs and builds the ACK. `to.message` is the message (its MSH at least); without it,
   * `to.controlId` (MSH-10 read by MSH-1 alone) is MSA-2. `to.encoding`: the ACK's encoding.
   */
  async #finish(
    to: { message?: Er7Message; controlId?: string | undefined; encoding: string },
    outcome: Hl7v2Outcome,
    code: AckCode,
    error?: { code: string; text: string; location?: string },
    reply = true,
    traced?: Traced,
  ): Promise<Hl7v2Result> {
    const { message } = to;
    const header = message === undefined ? undefined : headerOf(message);
    const type = header === undefined ? undefined : `${header.type}^${header.trigger}`;
    this.#o.metrics.count(type, outcome);
    const transport = this.#o.transport ?? 'mllp';
    const sent = !reply
      ? null
      : outcome !== 'unavailable'
        ? code
        : transport === 'mllp' && this.#o.config.transient_reply === 'AR'
          ? code
          : null;
    this.#o.logger.info(
      {
        message_type: type ?? null,
        control_id: (header?.controlId ?? to.controlId)?.slice(0, 64) ?? null,
        outcome,
        transport,
        // The ACK the sender gets: none (null) when a transient failure closes the MLLP
        // connection or is answered 503 over HTTP.
        ack: sent,
        ...(outcome === 'unavailable' && transport === 'http' ? { status: 503 } : {}),
      },
      'hl7v2 message',
    );
    const ack = buildAck(message, code, error, {
      charset: charsetNameOf(to.encoding),
      ...(to.controlId === undefined ? {} : { controlId: to.controlId }),
    });
    if (traced !== undefined) {
      await this.#trace(traced, header, to.controlId, outcome, {
        // No ACK sent: a transient failure answered 503 (HTTP) or by closing the connection.
        code: sent ?? (outcome !== 'unavailable' ? code : transport === 'http' ? '503' : 'none'),
        error: error?.code ?? null,
      });
    }
    return { outcome, code, ack, encoding: to.encoding, reply };
  }

  /**
   * Counts the message's outcome on its feed and, unless the commit recorded it, writes its
   * receipt: ignored (`filtered`), or stored without a receipt of the commit
   * (answered unchanged before the script, a delete). The answer never depends on the write.
   */
  async #trace(
    traced: Traced,
    header: ReturnType<typeof headerOf> | undefined,
    fallbackControlId: string | undefined,
    outcome: Hl7v2Outcome,
    answer: { code: string; error: string | null },
  ): Promise<void> {
    const trace = this.#o.trace;
    if (trace === undefined) return;
    let receipt: ReceiptOutcome;
    if (outcome === 'rejected' || outcome === 'unavailable') {
      // Refused: counted, and nothing written (bad input changes nothing: no receipt).
      trace.errored();
      return;
    } else if (outcome === 'ignored') {
      trace.filtered();
      receipt = { state: 'filtered' };
    } else {
      const stored = traced.stored;
      if (stored === undefined || stored.traced) return;
      receipt = { state: stored.state, psid: stored.psid, version: stored.version };
    }
    const controlId = header?.controlId ?? fallbackControlId ?? '';
    const head = trace.head(
      {
        controlId,
        sender: {
          application: header?.sendingApplication || null,
          facility: header?.sendingFacility || null,
        },
        type: header === undefined ? null : `${header.type}^${header.trigger}`,
        traceId: null,
        raw: traced.raw,
      },
      answer,
    );
    await trace.record(head, receipt);
  }

  /**
   * One decoded message; `encoding` is its character set (for `\Xhh\` escapes, and over MLLP the
   * ACK's unless `ackEncoding` says otherwise).
   */
  async handle(text: string, encoding?: string, ackEncoding?: string): Promise<Hl7v2Result> {
    this.#o.trace?.received();
    return this.#handle(text, encoding, ackEncoding);
  }

  async #handle(text: string, encoding?: string, ackEncoding?: string): Promise<Hl7v2Result> {
    const ackIn = this.#ackEncoding(encoding ?? 'utf-8', ackEncoding);
    const traced: Traced = { raw: text };
    const finish = (
      message: Er7Message,
      outcome: Hl7v2Outcome,
      code: AckCode,
      error?: { code: string; text: string; location?: string },
      reply?: boolean,
    ) => this.#finish({ message, encoding: ackIn }, outcome, code, error, reply, traced);
    let message: Er7Message;
    try {
      message = parseEr7(text, encoding);
    } catch (err) {
      if (!(err instanceof Er7ParseError)) throw err;
      // The MSH alone (after any leading blank line) when a later segment cannot be read; else
      // MSH-10 by MSH-1 alone, if there is one: either way every refusal echoes MSH-10.
      const header = refusalHeaderOf(text);
      if (!err.mshReadable || header.message === undefined) {
        return this.#finish(
          { controlId: header.controlId, encoding: ackIn },
          'rejected',
          'AR',
          { code: '100', text: err.message, location: 'MSH^1' },
          true,
          traced,
        );
      }
      return finish(header.message, 'rejected', 'AE', {
        code: '100',
        text: err.message,
        ...(err.sequence === undefined ? {} : { location: `SEG^${err.sequence}` }),
      });
    }

    const header = headerOf(message);
    if (header.type === '') {
      return finish(message, 'rejected', 'AR', {
        code: '101',
        text: 'MSH-9 (message type) is empty',
        location: 'MSH^1^9',
      });
    }
    if (header.controlId === '') {
      return finish(message, 'rejected', 'AE', {
        code: '101',
        text: 'MSH-10 (message control id) is empty',
        location: 'MSH^1^10',
      });
    }

    let mapped;
    try {
      mapped = mapMessage(message, this.#o.config);
    } catch (err) {
      if (!(err instanceof Hl7v2RejectError)) throw err;
      return finish(message, 'rejected', 'AE', {
        code: err.errorCode,
        text: err.message,
        location: err.location,
      });
    }
    if (mapped.action === 'ignore') return finish(message, 'ignored', 'AA');
    if (mapped.action === 'no_reply') {
      return finish(message, 'ignored', 'AA', undefined, false);
    }
    const patients = this.#o.patients;
    if (mapped.action === 'delete' && patients === undefined) {
      return finish(message, 'rejected', 'AE', {
        code: '200',
        text: 'patient delete (A23/A29) is not enabled on this listener',
        location: 'MSH^1^9',
      });
    }

    const eventId = `hl7v2:${header.sendingApplication}:${header.controlId}`;
    // The receipt of a stored message: the commit completes it with what it did and records it.
    const receipt = this.#o.trace?.head(
      {
        controlId: header.controlId,
        sender: {
          application: header.sendingApplication || null,
          facility: header.sendingFacility || null,
        },
        type: `${header.type}^${header.trigger}`,
        traceId: null,
        raw: text,
      },
      { code: 'AA' },
    );
    const store = async () => {
      if (mapped.action === 'merge') {
        let recorded = false;
        let psid: string | null = null;
        for (const merge of mapped.merges) {
          const merged = await this.#o.updates.merge({ ...merge, eventId, receipt, report: true });
          this.#o.trace?.queued(merged.queued ?? 0);
          recorded ||= merged.traced === true;
          psid = merged.patientServiceId;
        }
        traced.stored = { traced: recorded, state: 'unchanged', psid, version: null };
      } else if (mapped.action === 'delete') {
        try {
          await patients?.purge(mapped.localId, {
            actor: `hl7v2:${header.sendingApplication.slice(0, 64)}`,
          });
        } catch (err) {
          // A patient never seen (or deleted before: a resend) has nothing left to delete.
          if ((err as { code?: unknown }).code !== 'ERR_UNKNOWN_PATIENT') throw err;
        }
        // A purge removes the patient's trace: the delete's receipt names no patient.
        traced.stored = { traced: false, state: 'stored', psid: null, version: null };
      } else {
        const applied = await this.#o.updates.apply({
          localId: mapped.localId,
          source: 'hl7v2',
          eventId,
          changes: mapped.changes,
          kinds: mapped.kinds,
          receipt,
          report: true,
        });
        this.#o.trace?.queued(applied.queued ?? 0);
        traced.stored = {
          traced: applied.traced === true,
          state: 'unchanged',
          psid: applied.patientServiceId,
          version: applied.version === 0 ? null : applied.version,
        };
      }
    };
    try {
      await withDeadline(store(), this.#o.deadlineMs);
    } catch (err) {
      this.#o.logger.warn(
        { err: { name: (err as Error).name, code: (err as { code?: unknown }).code } },
        'hl7v2 message could not be stored',
      );
      return finish(message, 'unavailable', 'AR', {
        code: '207',
        text: 'storage is unavailable: resend the message later',
      });
    }
    return finish(message, 'accepted', 'AA');
  }
}
