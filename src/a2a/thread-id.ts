import type { Span } from "@opentelemetry/api";

/** The OpenTelemetry span attribute that groups every agent's spans of one conversation (docs/PROTOCOL.md). */
export const THREAD_ID_ATTRIBUTE = "platform.metadata.thread_id";

/** Longer ids are ignored: a client's string goes on every span of the conversation. */
const MAX_THREAD_ID_LENGTH = 256;

/** The conversation's trace thread id of an A2A request body: its top-level `metadata.thread_id`, if a non-empty string. */
export function threadIdOf(body: unknown): string | undefined {
  const metadata = (body as { metadata?: unknown } | null | undefined)?.metadata;
  const threadId = metadata && typeof metadata === "object" ? (metadata as { thread_id?: unknown }).thread_id : undefined;
  return typeof threadId === "string" && threadId !== "" && threadId.length <= MAX_THREAD_ID_LENGTH ? threadId : undefined;
}

/**
 * For an agent not built on the platform's framework: reads `metadata.thread_id` from the incoming A2A body and
 * sets it on the span as `platform.metadata.thread_id`, so its spans join the conversation's thread. Returns the id.
 */
export function attachThreadId(span: Span, body: unknown): string | undefined {
  const threadId = threadIdOf(body);
  if (threadId !== undefined) span.setAttribute(THREAD_ID_ATTRIBUTE, threadId);
  return threadId;
}
