import { watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { Server, TLSSocket, TlsOptions } from 'node:tls';
import type { Logger } from 'pino';
import {
  readServerTlsMaterial,
  type ClientCertificates,
  type ServerTlsFiles,
  type ServerTlsMaterial,
} from './server-tls-material.ts';

export interface ReloadingTlsContextOptions extends ServerTlsFiles {
  /** Names the listener in log lines (`ingest`, `mllp`). */
  listener: string;
  clientCertificates: ClientCertificates;
  logger: Logger;
  /**
   * How often the files are read again in case a change was not reported by the file system
   * (network or FUSE mounts, a watched directory replaced). @defaultValue 60000
   */
  pollIntervalMs?: number;
  /** Watch the files' directories for changes. @defaultValue true */
  watch?: boolean;
  /**
   * How long after a change is reported the files are read: a certificate and its key written one
   * after the other are then read together. @defaultValue 200
   */
  settleMs?: number;
}

const sameBytes = (a: Buffer | undefined, b: Buffer | undefined) =>
  a === undefined || b === undefined ? a === b : a.equals(b);

const sameMaterial = (a: ServerTlsMaterial, b: ServerTlsMaterial) =>
  a.cert.equals(b.cert) && a.key.equals(b.key) && sameBytes(a.ca, b.ca);

/**
 * A TLS listener's certificate, key and client CAs, read from PEM files and read again when they
 * change: each directory holding one of them is watched (a Kubernetes Secret's `..data` symlink
 * swap is a change in that directory), and the files are read again every `pollIntervalMs` in case
 * a change went unreported. A new set that serves (see `readServerTlsMaterial`) replaces the
 * served one with `server.setSecureContext`: connections made from then on get it, open ones keep
 * theirs. A set that does not serve (a half-written pair, a key of another certificate) is logged
 * at warn and the previous one kept. Log lines name the listener and the files, never their
 * content (the certificate's fingerprint and end of validity, which are public, are logged).
 */
export class ReloadingTlsContext {
  private readonly options: ReloadingTlsContextOptions;
  private served: ServerTlsMaterial;
  /** Why the files were last refused, so that a poll does not log the same refusal every time. */
  private refusal: string | undefined;
  private readonly watchers: FSWatcher[] = [];
  private poll: NodeJS.Timeout | undefined;
  private pending: NodeJS.Timeout | undefined;
  private server: Server | undefined;
  private closed = false;

  /** Reads the files: throws a `TlsFilesError` when they cannot serve. */
  constructor(options: ReloadingTlsContextOptions) {
    this.options = options;
    this.served = readServerTlsMaterial(options);
  }

  /** The served certificate's SHA-256 fingerprint. */
  get fingerprint(): string {
    return this.served.fingerprint;
  }

  /**
   * What `tls.createServer` or `https.createServer` (Fastify's `https`) takes: the files' content,
   * and whether client certificates are asked for and required.
   */
  serverOptions(): TlsOptions {
    const mode = this.options.clientCertificates;
    return {
      ...this.secureContextOptions(),
      requestCert: mode !== 'none',
      rejectUnauthorized: mode === 'require',
    };
  }

  /**
   * Serves `server` from now on: starts watching the files, refuses (with `request`) a client
   * certificate no configured CA signed, and logs refused handshakes without their content.
   */
  attach(server: Server): void {
    this.server = server;
    const { listener, logger, clientCertificates } = this.options;
    // `request`: a client may give no certificate, but one it gives must be signed by a CA of ours.
    if (clientCertificates === 'request') {
      server.prependListener('secureConnection', (socket: TLSSocket) => {
        if (socket.authorized || Object.keys(socket.getPeerCertificate()).length === 0) return;
        logger.info(
          { listener, reason: String(socket.authorizationError) },
          'tls client certificate refused',
        );
        socket.destroy();
      });
    }
    server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: TLSSocket) => {
      // Port scans and health checks fail handshakes too: at info only where clients are checked.
      const level = clientCertificates === 'none' ? 'debug' : 'info';
      logger[level]({ listener, reason: err.code ?? err.name }, 'tls handshake refused');
      socket.destroy();
    });
    if (this.options.watch !== false) this.watchDirectories();
    this.poll = setInterval(() => this.read(true), this.options.pollIntervalMs ?? 60_000);
    this.poll.unref();
  }

  /**
   * Reads the files now and serves them if they changed and serve; true when a new set is served.
   * Watching and polling call it.
   */
  reload(): boolean {
    return this.read(false);
  }

  /** Stops watching and polling (the server keeps the set it has). */
  close(): void {
    this.closed = true;
    for (const watcher of this.watchers.splice(0)) watcher.close();
    clearInterval(this.poll);
    clearTimeout(this.pending);
  }

  private secureContextOptions(material: ServerTlsMaterial = this.served) {
    return {
      cert: material.cert,
      key: material.key,
      ...(material.ca === undefined ? {} : { ca: material.ca }),
    };
  }

  private read(polled: boolean): boolean {
    if (this.closed || this.server === undefined) return false;
    const { listener, logger } = this.options;
    let next: ServerTlsMaterial;
    try {
      next = readServerTlsMaterial(this.options);
      if (sameMaterial(next, this.served)) {
        this.refusal = undefined;
        return false;
      }
      this.server.setSecureContext(this.secureContextOptions(next));
    } catch (err) {
      const reason = (err as Error).message;
      // A poll finding the same broken files again does not log them again.
      if (!polled || reason !== this.refusal) {
        logger.warn(
          { listener, reason, fingerprint: this.served.fingerprint },
          'tls certificate not reloaded: the files do not serve, the previous certificate is kept',
        );
      }
      this.refusal = reason;
      return false;
    }
    this.served = next;
    this.refusal = undefined;
    logger.info(
      { listener, fingerprint: next.fingerprint, not_after: next.notAfter },
      'tls certificate reloaded',
    );
    return true;
  }

  private watchDirectories(): void {
    const { certFile, keyFile, caFile } = this.options;
    const directories = new Set(
      [certFile, keyFile, ...(caFile === null ? [] : [caFile])].map(dirname),
    );
    for (const directory of directories) {
      try {
        const watcher = watch(directory, { persistent: false }, () => this.changed());
        watcher.on('error', (err: NodeJS.ErrnoException) => {
          // The poll still reads the files; the watch is not made again.
          this.options.logger.warn(
            { listener: this.options.listener, reason: err.code ?? err.name },
            'tls files no longer watched: changes are read every poll interval',
          );
          watcher.close();
        });
        this.watchers.push(watcher);
      } catch (err) {
        this.options.logger.warn(
          { listener: this.options.listener, reason: (err as NodeJS.ErrnoException).code },
          'tls files cannot be watched: changes are read every poll interval',
        );
      }
    }
  }

  private changed(): void {
    if (this.closed || this.pending !== undefined) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.reload();
    }, this.options.settleMs ?? 200);
    this.pending.unref();
  }
}
