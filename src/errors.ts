import { ERRORS, type CodesWith, type ErrorCode } from "./error-codes.ts";

/** Base of the product's own errors: each has a stable code from the catalogue (src/error-codes.ts) an operator can look up. */
export class EgressError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad configuration: the process exits 2 with one line per problem, each naming the key. */
export class ConfigError extends EgressError {
  readonly problems: string[];
  constructor(source: string, problems: string[]) {
    super("EGRESS_ERR_CONFIG", `invalid configuration in ${source}:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.problems = problems;
  }
}

/** A request the server refuses: answered with its code's status (from the catalogue) and a JSON body `{detail, code}`. */
export class HttpError extends EgressError {
  readonly statusCode: number;
  /** Headers the answer carries (Retry-After on a 503). */
  readonly headers: Record<string, string> | undefined;
  constructor(code: CodesWith<{ status: number }>, message: string, headers?: Record<string, string>) {
    super(code, message);
    this.statusCode = ERRORS[code].status;
    this.headers = headers;
  }
}

/**
 * The data dir's outbox is missing, foreign or damaged: the sidecar refuses to start rather than start a new,
 * empty outbox over it (which would silently lose undelivered billing records). Exit code 3 (its codes' entries
 * say so): an operator must look, restore or deliberately start afresh (`egress-agent start --new-outbox`).
 */
export class DataDirError extends EgressError {
  constructor(code: CodesWith<{ exit: 3 }>, message: string) {
    super(code, message);
  }
}

/**
 * A state the code never means to reach (a route naming a body budget the server lacks, a value the config schema
 * let through): a bug. Catalogued like any other error, so even a bug's message has a code an operator can report.
 */
export class InternalError extends EgressError {
  constructor(message: string) {
    super("EGRESS_ERR_INTERNAL", message);
  }
}
