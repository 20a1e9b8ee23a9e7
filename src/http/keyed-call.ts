import { AnswerTooLargeError, readCappedText } from "./capped-answer.ts";
import { describeRemoteError, mediaType, parseAnswerText } from "../remote-answer.ts";

/** Why a call to one of our own APIs (the control plane's, the beacon's admin API) gave no usable answer. */
export type CallFailure =
  | { kind: "unreachable"; cause: string }
  | { kind: "unreadable"; reason: string; status: number }
  | { kind: "refused"; said: string; status: number }
  | { kind: "not-json"; status: number };

/**
 * One JSON call with `X-Api-Key`, shared by the clients of our APIs: the redirect is an answer, never followed (fetch
 * would send the key and the body's secrets to its Location); the answer is read within `capBytes`; a refusal is
 * said by its status, code and a 422's field paths only (src/remote-answer.ts: never echoed text). `fail` turns each
 * failure into the client's own error. Resolves with the parsed JSON of a 2xx.
 */
export async function keyedJsonCall(
  call: { baseUrl: string; apiKey: string; method: string; path: string; body?: unknown; timeoutMs: number; capBytes: number },
  fail: (failure: CallFailure) => Error,
): Promise<unknown> {
  const { baseUrl, method, path, body } = call;
  let response: Response;
  try {
    response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { "x-api-key": call.apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: "manual",
      signal: AbortSignal.timeout(call.timeoutMs),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw fail({ kind: "unreachable", cause: cause?.code ?? cause?.message ?? (err as Error).name });
  }
  let text: string;
  try {
    text = await readCappedText(response, call.capBytes, baseUrl);
  } catch (err) {
    const reason = err instanceof AnswerTooLargeError ? err.message : `its answer was cut off (${(err as Error).name})`;
    throw fail({ kind: "unreadable", reason, status: response.status });
  }
  const parsed = parseAnswerText(text);
  if (!response.ok) {
    const said = describeRemoteError({ status: response.status, body: parsed, contentType: mediaType(response) });
    throw fail({ kind: "refused", said, status: response.status });
  }
  if (typeof parsed === "string") throw fail({ kind: "not-json", status: response.status });
  return parsed;
}
