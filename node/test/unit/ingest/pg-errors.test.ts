import { describe, expect, it } from "vitest";
import { fromPgError } from "../../../src/adapters/pg/errors.js";

const pgError = (code: string, message = "boom") => Object.assign(new Error(message), { code });

describe("fromPgError", () => {
  it("maps data exceptions (SQLSTATE class 22) to unprocessable, not internal", () => {
    for (const code of ["22P05", "22P02", "22021", "22003"]) {
      const mapped = fromPgError(pgError(code), "insert tasks");
      expect(mapped.code).toBe("unprocessable");
      expect(mapped.details).toMatchObject({ rule: "data_exception", sqlstate: code });
    }
  });

  it("keeps transient failures retryable and everything else internal", () => {
    expect(fromPgError(pgError("40001"), "x").code).toBe("unavailable");
    expect(fromPgError(pgError("42P01"), "x").code).toBe("internal");
    expect(fromPgError(new Error("plain"), "x").code).toBe("internal");
  });
});
