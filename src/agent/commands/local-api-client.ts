import type { z } from "zod";
import { EgressError } from "../../errors.ts";
import { MiB, readCappedText } from "../../http/capped-answer.ts";
import { describeRemoteError, mediaType, parseAnswerText } from "../../remote-answer.ts";

export const DEFAULT_LOCAL_URL = "http://127.0.0.1:4318";

/** The most of one local API answer read: the largest is an audit page of at most 1000 entries, well under 2 MiB. */
export const LOCAL_ANSWER_CAP = 16 * MiB;

/** GETs a sidecar's local API route and parses the answer with its schema; a clear error when it is not there. */
export async function getLocal<S extends z.ZodType>(baseUrl: string, path: string, schema: S): Promise<z.output<S>> {
  const url = `${baseUrl.replace(/\/+$/, "")}${path}`;
  let response: Response;
  try {
    response = await fetch(url, { redirect: "manual", signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    throw new EgressError("EGRESS_ERR_SIDECAR_UNREACHABLE", `cannot reach the sidecar at ${baseUrl} (${cause}): is it running? (--url)`);
  }
  const text = await readCappedText(response, LOCAL_ANSWER_CAP, url);
  if (response.status !== 200) {
    const answer = { status: response.status, body: parseAnswerText(text), contentType: mediaType(response) };
    throw new EgressError("EGRESS_ERR_SIDECAR_ANSWER", `${url} answered ${describeRemoteError(answer)}`);
  }
  return schema.parse(JSON.parse(text));
}
