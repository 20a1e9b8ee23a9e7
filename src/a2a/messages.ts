import type { Message, Part } from "../protocol/a2a.ts";
import { invalidParams } from "./rpc-error.ts";

/** A message of a graph's `messages` state: a LangChain message object, or a plain `{role, content}` entry. */
type StateMessage = { id?: unknown; role?: unknown; type?: unknown; content?: unknown; getType?: () => string; _getType?: () => string };

/**
 * The graph input for an A2A message: its text and file parts as one `messages` entry (`human` for a user,
 * `assistant` for an agent), its data parts merged into the input. Text alone is the entry's string content; with
 * files, the content is LangChain's standard content blocks (text, then image, audio, video or file blocks: base64
 * `data` with its `mimeType`, or a `url`), as the platform's agent server hands them to a graph.
 */
export function graphInput(message: Message): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const blocks: Record<string, unknown>[] = [];
  for (const [index, part] of message.parts.entries()) {
    if (part.kind === "text") blocks.push({ type: "text", text: part.text });
    else if (part.kind === "file") blocks.push(fileBlock(part.file, index));
    else Object.assign(input, part.data);
  }
  if (blocks.length > 0) {
    const content = blocks.every((block) => block.type === "text") ? blocks.map((block) => block.text).join("\n") : blocks;
    input.messages = [{ role: message.role === "user" ? "human" : "assistant", content }];
  }
  return input;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A file part's file as a LangChain content block, or -32602 naming what is wrong with it. */
function fileBlock(file: Record<string, unknown>, index: number): Record<string, unknown> {
  const where = ["params", "message", "parts", index, "file"];
  const refuse = (field: string, msg: string) =>
    invalidParams(`message.parts.${index}.file${field}: ${msg}`, [
      { loc: [...where, ...(field ? [field.slice(1)] : [])], msg, type: "value_error" },
    ]);
  const mimeType = typeof file.mimeType === "string" && file.mimeType !== "" ? file.mimeType : undefined;
  const kind = /^(image|audio|video)\//.exec(mimeType ?? "")?.[1] ?? "file";
  const named = typeof file.name === "string" && file.name !== "" ? { metadata: { filename: file.name } } : {};
  if (typeof file.bytes === "string") {
    if (file.uri !== undefined) throw refuse("", "holds bytes or uri, not both");
    if (file.bytes.length % 4 !== 0 || !BASE64.test(file.bytes)) throw refuse(".bytes", "must be base64");
    return { type: kind, mimeType: mimeType ?? "application/octet-stream", data: file.bytes, ...named };
  }
  if (typeof file.uri === "string" && URL.canParse(file.uri))
    return { type: kind, url: file.uri, ...(mimeType ? { mimeType } : {}), ...named };
  throw refuse(file.uri === undefined ? "" : ".uri", file.uri === undefined ? "holds bytes (base64) or uri" : "must be a URL");
}

function kindOf(message: StateMessage): string | undefined {
  if (typeof message.getType === "function") return message.getType();
  if (typeof message._getType === "function") return message._getType();
  return typeof message.type === "string" ? message.type : typeof message.role === "string" ? message.role : undefined;
}

export function isAssistantMessage(message: unknown): boolean {
  const kind = message && typeof message === "object" ? kindOf(message as StateMessage) : undefined;
  return kind === "ai" || kind === "assistant" || kind === "AIMessageChunk";
}

/** The text of a state message: its string content, or its text blocks joined. */
export function messageText(message: unknown): string {
  const content = (message as StateMessage).content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: unknown) =>
      typeof block === "string"
        ? block
        : (block as { type?: unknown; text?: unknown })?.type === "text"
          ? String((block as { text: unknown }).text)
          : "",
    )
    .join("");
}

/**
 * What one "updates" stream chunk (`{node: output}`) holds: the messages the nodes returned (a list or one), and
 * the values of any `interrupt()` (the `__interrupt__` entry).
 */
export function nodeOutputs(chunk: unknown): { messages: unknown[]; interrupts: unknown[] } {
  const messages: unknown[] = [];
  const interrupts: unknown[] = [];
  for (const [node, output] of Object.entries((chunk ?? {}) as Record<string, unknown>)) {
    if (node === "__interrupt__") {
      for (const interrupt of Array.isArray(output) ? output : []) interrupts.push((interrupt as { value?: unknown }).value);
      continue;
    }
    const returned = (output as { messages?: unknown } | null | undefined)?.messages;
    if (returned !== undefined && returned !== null) messages.push(...(Array.isArray(returned) ? returned : [returned]));
  }
  return { messages, interrupts };
}

export function textParts(text: string): Part[] {
  return [{ kind: "text", text }];
}

/** What answers a graph's question: the message's text, or (without text) its data parts merged. */
export function resumeValue(message: Message): unknown {
  const texts = message.parts.flatMap((part) => (part.kind === "text" ? [part.text] : []));
  if (texts.length > 0) return texts.join("\n");
  return Object.assign({}, ...message.parts.map((part) => (part.kind === "data" ? part.data : {})));
}

/** A graph's questions as message parts: each as text, and an object also as a data part. */
export function interruptParts(values: readonly unknown[]): Part[] {
  return values.flatMap((value): Part[] => {
    if (typeof value === "string") return [{ kind: "text", text: value }];
    const text: Part = { kind: "text", text: JSON.stringify(value) };
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? [text, { kind: "data", data: value as Record<string, unknown> }]
      : [text];
  });
}
