import type * as z from "zod";
import { IngestTracesResponse } from "../../protocol/trace-transaction.ts";
import { VerifyResponse } from "../../protocol/license.ts";
import { isHtmlAnswer } from "../../remote-answer.ts";
import type { Stream } from "../storage/outbox.ts";
import type { BeaconResponse } from "./beacon-client.ts";

/**
 * What a 2xx from the beacon must be to count (a verified license, a delivered batch), declared once per stream in
 * `beaconAnswers`. Where the interface documents an answer, it is required: a 2xx without it is a failed attempt
 * (a wrong URL, an echoing endpoint). Where it documents none, requiring our beacon's answer would resend the same
 * batch forever to a beacon that answers `{}`, an empty 200 or 204, and hold back everything after it.
 */
export type AnswerRule =
  | {
      documented: true;
      /** How messages name it, e.g. "answer {inserted_count}". */
      name: string;
      /** Undefined when `body` is the answer to a batch of `records`; else what is wrong with it. */
      check(body: unknown, records: number): string | undefined;
    }
  | { documented: false; name: string };

/** The documented answer `schema` describes, with `beyond` for what a schema cannot say (a count within the batch). */
function documentedAnswer<T>(name: string, schema: z.ZodType<T>, beyond?: (answer: T, records: number) => string | undefined): AnswerRule {
  return {
    documented: true,
    name,
    check(body, records) {
      const parsed = schema.safeParse(body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return `${issue.path.length > 0 ? `${issue.path.join(".")}: ` : ""}${issue.message}`;
      }
      return beyond?.(parsed.data, records);
    },
  };
}

/** No documented answer: any 2xx that is not a page counts, whatever its body (JSON, protobuf bytes, none). */
const anyNonHtmlAnswer = (name: string): AnswerRule => ({ documented: false, name });

/**
 * Every request the sidecar sends, and what its 2xx must be:
 * - verify: `{token}` (the token is then checked on its own);
 * - ingest-traces: `{inserted_count}`, not above the batch size;
 * - usage snapshot: not documented by the platform (our beacon's `{inserted_count}` is not required);
 * - OTLP metrics, traces, logs: the empty export answer is `{}` in JSON and zero bytes in protobuf, so any body.
 */
export const beaconAnswers = {
  license: documentedAnswer("answer {token}", VerifyResponse),
  billing: documentedAnswer("answer {inserted_count}", IngestTracesResponse, ({ inserted_count }, records) =>
    inserted_count > records ? `inserted_count ${inserted_count} is more than the ${records} sent` : undefined,
  ),
  usage: anyNonHtmlAnswer("usage-snapshot answer"),
  metrics: anyNonHtmlAnswer("OTLP export answer"),
  traces: anyNonHtmlAnswer("OTLP export answer"),
  logs: anyNonHtmlAnswer("OTLP export answer"),
} as const satisfies Record<Stream | "license", AnswerRule>;

/**
 * Why a 2xx is not what `rule` requires for `records` records, worded for status and the log; undefined when it
 * counts. HTML never counts: a proxy's or portal's login page answers 200 too. (Redirects are never followed, so
 * a 3xx to a login page is a failed attempt before it gets here.)
 */
export function answerProblem(response: BeaconResponse, rule: AnswerRule, records: number): string | undefined {
  if (isHtmlAnswer(response)) {
    return `the beacon URL answered ${response.status} with HTML, not the beacon's ${rule.name}: a proxy or login page?`;
  }
  if (!rule.documented) return undefined;
  const problem = rule.check(response.body, records);
  return problem === undefined ? undefined : unexpectedAnswer(response, rule.name, problem);
}

/**
 * Why a 2xx is not the beacon's `expected` answer (`problem`, what a check found). The body itself is never
 * quoted: an endpoint that echoes requests would echo the license key.
 */
function unexpectedAnswer(response: BeaconResponse, expected: string, problem: string): string {
  const text = typeof response.body === "string" ? response.body.trim() : undefined;
  const what =
    response.body === undefined || text === ""
      ? "an empty body"
      : text !== undefined
        ? "text" // not its media type: the header is the server's text too
        : "JSON";
  return `the beacon URL answered ${response.status} with ${what}, not the beacon's ${expected} (${problem}): is beaconUrl the beacon?`;
}
