/**
 * A stand-in for the TCP socket under node-postgres (`pg`'s `stream`
 * option), wired to the embedded engine instead of a server. So the stores
 * of adapters/pg run over PGlite unchanged, through pg's own protocol code,
 * type parsers and parameter serialisation: the same SQL, the same values.
 *
 * What it does of a server's part:
 *  - the startup: PGlite has no authentication and one session, so the
 *    startup packet is answered here (AuthenticationOk, ReadyForQuery) after
 *    resetting the session — a previous connection may have died inside a
 *    transaction or left prepared statements; startup parameters
 *    (`role`, `statement_timeout`, ...) do not apply (pool.ts sets the role
 *    per transaction instead);
 *  - batching: pg writes Parse, Bind, Describe, Execute and Sync as separate
 *    writes, as into a socket; they go to the engine together, at the Sync
 *    (or a Flush, or a simple Query), in one round trip;
 *  - Terminate closes this stream only: the session lives on for the next
 *    connection.
 */
import { Duplex } from "node:stream";
import { serialize } from "pg-protocol";
import type { PgliteEngine } from "./engine.js";

const SYNC = 0x53; // 'S'
const FLUSH = 0x48; // 'H'
const QUERY = 0x51; // 'Q'
const TERMINATE = 0x58; // 'X'

/** AuthenticationOk, then ReadyForQuery (idle). */
const STARTUP_ANSWER = Buffer.from([
  0x52, 0, 0, 0, 8, 0, 0, 0, 0, /* R: auth ok */ 0x5a, 0, 0, 0, 5, 0x49 /* Z: idle */,
]);

/** Whatever the previous connection left: an open transaction, prepared statements, settings, role. */
const RESET_SESSION = Buffer.concat([serialize.query("ROLLBACK"), serialize.query("DISCARD ALL")]);

export class PgliteSocket extends Duplex {
  private inbox: Buffer = Buffer.alloc(0);
  private started = false;
  /** Complete messages not yet sent to the engine. */
  private batch: Buffer[] = [];

  constructor(private readonly engine: PgliteEngine) {
    super();
  }

  /** pg's Connection "connects" the stream; there is nothing to connect to. */
  connect(): this {
    queueMicrotask(() => this.emit("connect"));
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error) => void): void {
    this.receive(chunk).then(() => done(), done);
  }

  override _final(done: () => void): void {
    this.push(null);
    done();
  }

  private async receive(chunk: Buffer): Promise<void> {
    this.inbox = this.inbox.length === 0 ? chunk : Buffer.concat([this.inbox, chunk]);
    if (!this.started) {
      // The startup packet has no type byte: int32 length, then its body.
      if (this.inbox.length < 4 || this.inbox.length < this.inbox.readInt32BE(0)) return;
      this.inbox = this.inbox.subarray(this.inbox.readInt32BE(0));
      this.started = true;
      await this.engine.exec(RESET_SESSION);
      this.push(STARTUP_ANSWER);
    }
    while (this.inbox.length >= 5) {
      const length = 1 + this.inbox.readInt32BE(1);
      if (this.inbox.length < length) return;
      const message = this.inbox.subarray(0, length);
      this.inbox = this.inbox.subarray(length);
      const type = message[0]!;
      if (type === TERMINATE) {
        this.push(null);
        return;
      }
      this.batch.push(message);
      if (type === SYNC || type === FLUSH || type === QUERY) {
        const bytes = Buffer.concat(this.batch);
        this.batch = [];
        const answer = await this.engine.exec(bytes);
        this.push(Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength));
      }
    }
  }
}
