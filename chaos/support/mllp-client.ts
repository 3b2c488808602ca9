import { connect } from 'node:net';

const VT = 0x0b;
const FS = 0x1c;
const CR = 0x0d;

/** Wraps `payload` in an MLLP frame (VT … FS CR). */
export function mllpFrame(payload: string | Buffer): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  return Buffer.concat([Buffer.from([VT]), body, Buffer.from([FS, CR])]);
}

/** How one MLLP exchange ended. */
export type MllpOutcome =
  | { kind: 'ack'; ack: string; code: string }
  | { kind: 'closed' }
  | { kind: 'timeout' }
  | { kind: 'error'; message: string };

/**
 * Opens a connection to 127.0.0.1:`port`, writes `bytes`, and waits for the first complete ACK
 * frame, the connection's end, or `timeoutMs`, whichever comes first; then closes.
 */
export function mllpExchange(port: number, bytes: Buffer, timeoutMs: number): Promise<MllpOutcome> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let buffered = Buffer.alloc(0);
    let done = false;
    const finish = (outcome: MllpOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const start = buffered.indexOf(VT);
      const end = buffered.indexOf(FS, start + 1);
      if (start < 0 || end < 0) return;
      const ack = buffered.subarray(start + 1, end).toString('utf8');
      const msa = ack.split(/\r\n?|\n/).find((segment) => segment.startsWith('MSA|'));
      finish({ kind: 'ack', ack, code: msa?.split('|')[1] ?? '?' });
    });
    socket.on('end', () => finish({ kind: 'closed' }));
    socket.on('close', () => finish({ kind: 'closed' }));
    socket.on('error', (err) => finish({ kind: 'error', message: err.message }));
  });
}
