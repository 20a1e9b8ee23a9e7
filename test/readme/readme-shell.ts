import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

// The shell examples of the README and of docs/ as data: each fenced `sh` block, the marker that names who runs it,
// and each command line turned into what a reader would type: the comment dropped, optional `[...]` parts left out
// or put in, and the placeholders (ID, PORT, `...`) given values.

export const ROOT = new URL("../..", import.meta.url).pathname;

/** The documents a reader follows, relative to the repository's root: README.md, then docs/*.md. */
export function docFiles(): string[] {
  const docs = readdirSync(join(ROOT, "docs")).filter((file) => file.endsWith(".md"));
  return ["README.md", ...docs.sort().map((file) => `docs/${file}`)];
}

/** The marker on the line before a shell block: `<!-- readme-test: NAME -->`, NAME a scenario of commands.e2e.test.ts. */
const MARKER = /^<!-- readme-test: ([a-z0-9-]+) -->$/;

export interface ShellBlock {
  /** The document it is in, relative to the repository's root (`README.md`, `docs/sidecar.md`). */
  file: string;
  /** The marker's name; undefined for a block without one. */
  name: string | undefined;
  /** Line (1-based) of the opening fence. */
  fence: number;
  /** Its command lines, each with its line in the document. */
  lines: { line: number; text: string }[];
}

/** Every shell block of the README and docs/. */
export function allShellBlocks(): ShellBlock[] {
  return docFiles().flatMap((file) => shellBlocks(file, readFileSync(join(ROOT, file), "utf8")));
}

export function shellBlocks(file: string, markdown: string): ShellBlock[] {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith("```"));
    if (["sh", "bash", "shell", "console"].includes(fence[1]!)) {
      blocks.push({
        file,
        name: MARKER.exec(lines[i - 1] ?? "")?.[1],
        fence: i + 1,
        lines: lines
          .slice(i + 1, end)
          .map((text, k) => ({ line: i + 2 + k, text }))
          .filter(({ text }) => text.trim() !== ""),
      });
    }
    i = end;
  }
  return blocks;
}

/** The line without its trailing `# comment` (a `#` after a blank, outside quotes). */
export function withoutComment(text: string): string {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "#" && /\s/.test(text[i - 1] ?? " ")) return text.slice(0, i).trimEnd();
  }
  return text.trimEnd();
}

/**
 * The forms of a synopsis line a reader would type: every optional `[...]` part left out, and every one put in (of
 * `[a | b]`, the first). A line without optional parts has one form.
 */
export function forms(text: string): string[] {
  const groups = /\[([^\]]*)\]/g;
  if (!groups.test(text)) return [text];
  const tidy = (line: string) => line.replace(/ {2,}/g, " ").trim();
  return [tidy(text.replace(groups, "")), tidy(text.replace(groups, (_, inner: string) => inner.split("|")[0]!.trim()))];
}

/** The line with each placeholder (a whole word, or `...` after `=`) replaced by its value, a shell word or expression. */
export function filled(text: string, values: Record<string, string>): string {
  let out = text;
  for (const [placeholder, value] of Object.entries(values)) {
    const pattern =
      placeholder === "..."
        ? /=\.\.\.(?=\s|$)/g
        : new RegExp(`(?<![\\w-])${placeholder.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w-])`, "g");
    out = out.replace(pattern, placeholder === "..." ? `=${value}` : value);
  }
  return out;
}
