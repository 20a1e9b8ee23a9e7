// A small subset of Helm's template language, enough to render the chart's config file without helm (which this
// machine does not have): text with {{- -}} trimming, comments, `define`, `if` / `else if` / `else`, `include`, and the
// functions quote, toYaml, indent, nindent. Anything else that is evaluated throws, so a template that grows beyond
// the subset fails its test loudly instead of rendering something helm would not.
import { stringify } from "yaml";

type Token = { kind: "text"; text: string } | { kind: "action"; body: string };
type Node =
  | { kind: "text"; text: string }
  | { kind: "output"; expr: string }
  | { kind: "block"; keyword: string; arg: string; branches: { cond: string | undefined; body: Node[] }[] };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /\{\{(-\s)?\s*([\s\S]*?)\s*(\s-)?\}\}/g;
  let last = 0;
  let trimNext = false;
  for (let match = pattern.exec(source); match; match = pattern.exec(source)) {
    let text = source.slice(last, match.index);
    if (trimNext) text = text.replace(/^\s+/, "");
    if (match[1]) text = text.replace(/\s+$/, "");
    tokens.push({ kind: "text", text });
    tokens.push({ kind: "action", body: match[2]! });
    trimNext = Boolean(match[3]);
    last = pattern.lastIndex;
  }
  let rest = source.slice(last);
  if (trimNext) rest = rest.replace(/^\s+/, "");
  tokens.push({ kind: "text", text: rest });
  return tokens.filter((token) => token.kind === "action" || token.text !== "");
}

const OPENERS = new Set(["if", "with", "range", "define", "block"]);

function parse(tokens: Token[]): Node[] {
  const root: Node[] = [];
  const stack: { node: Extract<Node, { kind: "block" }>; body: Node[] }[] = [];
  const current = () => stack.at(-1)?.body ?? root;
  for (const token of tokens) {
    if (token.kind === "text") {
      current().push({ kind: "text", text: token.text });
      continue;
    }
    const body = token.body;
    if (body.startsWith("/*")) continue;
    const [word = "", ...restWords] = body.split(/\s+/);
    const rest = restWords.join(" ");
    if (OPENERS.has(word)) {
      const branch = { cond: word === "if" ? rest : undefined, body: [] as Node[] };
      const node = { kind: "block" as const, keyword: word, arg: rest, branches: [branch] };
      current().push(node);
      stack.push({ node, body: branch.body });
    } else if (word === "else") {
      const top = stack.at(-1);
      if (!top) throw new Error("template: else outside a block");
      const branch = { cond: rest.startsWith("if ") ? rest.slice(3) : undefined, body: [] as Node[] };
      top.node.branches.push(branch);
      top.body = branch.body;
    } else if (word === "end") {
      if (!stack.pop()) throw new Error("template: unmatched end");
    } else {
      current().push({ kind: "output", expr: body });
    }
  }
  if (stack.length > 0) throw new Error(`template: unclosed ${stack.at(-1)!.node.keyword}`);
  return root;
}

/** The `define`d templates of a file (e.g. _helpers.tpl), by name. */
export function defines(source: string): Map<string, Node[]> {
  const found = new Map<string, Node[]>();
  for (const node of parse(tokenize(source))) {
    if (node.kind === "block" && node.keyword === "define") found.set(JSON.parse(node.arg) as string, node.branches[0]!.body);
  }
  return found;
}

export interface RenderContext {
  /** Templates `include` may render, from defines(). */
  templates: Map<string, Node[]>;
  /** Fixed output for templates outside the subset (names, labels, checks): name -> text. */
  stubs?: Record<string, string>;
}

function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

function lookup(value: unknown, path: string[]): unknown {
  let node = value;
  for (const part of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

function indent(spaces: number, text: string): string {
  const pad = " ".repeat(spaces);
  return text
    .split("\n")
    .map((line) => pad + line)
    .join("\n");
}

function splitPipeline(expr: string): string[] {
  const parts: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < expr.length; i++) {
    const ch = expr[i]!;
    if (ch === '"' && expr[i - 1] !== "\\") quoted = !quoted;
    if (ch === "(" && !quoted) throw new Error(`template subset: parentheses are not supported: ${expr}`);
    if (ch === "|" && !quoted) {
      parts.push(current.trim());
      current = "";
    } else current += ch;
  }
  parts.push(current.trim());
  return parts;
}

export function render(source: string | Node[], dot: unknown, context: RenderContext): string {
  const nodes = typeof source === "string" ? parse(tokenize(source)) : source;
  return nodes.map((node) => renderNode(node, dot, context)).join("");
}

function renderNode(node: Node, dot: unknown, context: RenderContext): string {
  if (node.kind === "text") return node.text;
  if (node.kind === "output") return printValue(evaluate(node.expr, dot, context), node.expr);
  if (node.keyword === "define") return "";
  if (node.keyword !== "if") throw new Error(`template subset: "${node.keyword}" is not supported`);
  for (const branch of node.branches) {
    if (branch.cond === undefined || truthy(evaluate(branch.cond, dot, context))) return render(branch.body, dot, context);
  }
  return "";
}

function printValue(value: unknown, expr: string): string {
  if (value === undefined || value === null) return "<no value>";
  if (typeof value === "object") throw new Error(`template subset: printing a ${Array.isArray(value) ? "list" : "map"} (${expr})`);
  return String(value);
}

function evaluate(expr: string, dot: unknown, context: RenderContext): unknown {
  let piped: unknown[] = [];
  for (const command of splitPipeline(expr)) {
    const words = command.match(/"(?:[^"\\]|\\.)*"|\S+/g) ?? [];
    const [head = "", ...args] = words;
    const values = [...args.map((word) => argument(word, dot)), ...piped];
    piped = [isValueWord(head) && values.length === 0 ? argument(head, dot) : call(head, values, context)];
  }
  return piped[0];
}

function isValueWord(word: string): boolean {
  return word.startsWith(".") || word.startsWith('"') || /^-?\d+$/.test(word) || ["true", "false", "nil"].includes(word);
}

function argument(word: string, dot: unknown): unknown {
  if (word === ".") return dot;
  if (word.startsWith(".")) return lookup(dot, word.slice(1).split("."));
  if (word.startsWith('"')) return JSON.parse(word);
  if (/^-?\d+$/.test(word)) return Number(word);
  if (word === "true" || word === "false") return word === "true";
  if (word === "nil") return null;
  throw new Error(`template subset: unsupported argument ${word}`);
}

function call(name: string, args: unknown[], context: RenderContext): unknown {
  switch (name) {
    case "quote":
      return JSON.stringify(args[0] === undefined || args[0] === null ? "" : String(args[0]));
    case "toYaml":
      // Helm's toYaml drops the document's final newline.
      return stringify(args[0] ?? null).replace(/\n$/, "");
    case "indent":
      return indent(args[0] as number, String(args[1]));
    case "nindent":
      return `\n${indent(args[0] as number, String(args[1]))}`;
    case "include": {
      const template = args[0] as string;
      if (context.stubs && template in context.stubs) return context.stubs[template];
      const body = context.templates.get(template);
      if (!body) throw new Error(`template subset: no template "${template}"`);
      return render(body, args[1], context);
    }
    default:
      throw new Error(`template subset: function "${name}" is not supported`);
  }
}
