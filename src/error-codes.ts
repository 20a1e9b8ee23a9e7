/**
 * Every error code the product emits, one entry each: where a user meets it (the HTTP status it is answered with,
 * the exit code of the command it ends, or only the log), what it means and what to do. Messages carry the
 * specifics (a path, a limit, a key); an entry says what the code means whatever the message.
 *
 * The "Error codes" table of docs/errors.md is written from this (`node scripts/error-codes-table.ts`), and
 * test/errors/catalogue.test.ts fails when the table, or a code in src/, is not in step with it.
 */
import { AGENT_SERVER_ERRORS } from "./error-codes/agent-server.ts";
import { BEACON_ERRORS } from "./error-codes/beacon.ts";
import { CONTROL_PLANE_ERRORS } from "./error-codes/control-plane.ts";
import type { ErrorEntry } from "./error-codes/entry.ts";
import { HTTP_ERRORS } from "./error-codes/http.ts";
import { SIDECAR_ERRORS } from "./error-codes/sidecar.ts";

export type { ErrorEntry } from "./error-codes/entry.ts";

/** One product, one prefix: `EGRESS_ERR_` tells our codes from Node's (`ERR_...`), jose's and SQLite's. */
export const ERRORS = {
  ...HTTP_ERRORS,
  ...SIDECAR_ERRORS,
  ...BEACON_ERRORS,
  ...AGENT_SERVER_ERRORS,
  ...CONTROL_PLANE_ERRORS,
} as const satisfies Record<`EGRESS_ERR_${string}`, ErrorEntry>;

export type ErrorCode = keyof typeof ERRORS;

/** The codes whose entry has `Shape`: `CodesWith<{ status: number }>` are the ones a server answers with. */
export type CodesWith<Shape> = { [K in ErrorCode]: (typeof ERRORS)[K] extends Shape ? K : never }[ErrorCode];

/** The exit code of a command that ends with `code`: its entry's, else 1 (a runtime failure). */
export function exitCodeOf(code: ErrorCode): number {
  const entry = ERRORS[code];
  return "exit" in entry ? entry.exit : 1;
}
