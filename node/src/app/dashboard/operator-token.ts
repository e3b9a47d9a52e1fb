/**
 * The operator's credential (CF_ADMIN_TOKEN) for the cluster page. It is a
 * shared secret, not a tenant's key: it sees every node and lease but no
 * tenant's tasks. Compared in constant time: both sides are hashed with
 * SHA-256 first, so the comparison takes the same time whatever the length
 * or the first differing byte. Without a configured token nothing matches.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

export class OperatorToken {
  private readonly expected: Buffer | null;

  constructor(token: string | undefined) {
    this.expected = token === undefined || token === "" ? null : digest(token);
  }

  get configured(): boolean {
    return this.expected !== null;
  }

  /** Throws 401 unless `authorization` is `Bearer <the token>`. */
  check(authorization: string): void {
    const match = /^bearer +(.+)$/i.exec(authorization.trim());
    const presented = digest(match?.[1] ?? "");
    if (this.expected === null || !timingSafeEqual(presented, this.expected)) {
      throw new ChronofenceError(
        ErrorCode.Unauthorized,
        this.expected === null
          ? "the cluster view is off: set CF_ADMIN_TOKEN on the API role"
          : "an operator token (CF_ADMIN_TOKEN) is required",
      );
    }
  }
}
