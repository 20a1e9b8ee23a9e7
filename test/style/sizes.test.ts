import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { stripTypeScriptTypes } from "node:module";
import * as acorn from "acorn";
import * as walk from "acorn-walk";

// Size as a reader counts it: every line, comments and blank lines too (the linter's rules skip some). A file of
// src/ holds at most 300 lines and a function at most 80, its doc comment included: past that a reader loses the
// thread, and the piece does more than one job.
const MAX_FILE_LINES = 300;
const MAX_FUNCTION_LINES = 80;
const root = new URL("../../", import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

const files = sources(join(root, "src"));

test(`every file of src/ has at most ${MAX_FILE_LINES} lines, counting every line`, () => {
  const long = files
    .map((path) => ({ path: relative(root, path), lines: readFileSync(path, "utf8").trimEnd().split("\n").length }))
    .filter(({ lines }) => lines > MAX_FILE_LINES);
  assert.deepEqual(long, []);
});

/**
 * Each function of `path` with its name and line count, from its doc comment to its closing brace. The types are
 * blanked out in place (Node's type stripping keeps every position), so a JavaScript parser reads the lines as written.
 */
function functionSizes(path: string): { name: string; lines: number }[] {
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n");
  const comments: acorn.Comment[] = [];
  const program = acorn.parse(stripTypeScriptTypes(text), {
    ecmaVersion: "latest",
    sourceType: "module",
    locations: true,
    onComment: comments,
  });
  const sizes: { name: string; lines: number }[] = [];
  const measure = (node: acorn.Node, name: string, holder: acorn.Node = node) => {
    let start = holder.loc!.start.line;
    // The doc comment just above (a blank line between: not its comment).
    const doc = comments.filter((c) => c.loc!.end.line === start - 1 || c.loc!.end.line === start).at(-1);
    if (doc && doc.end <= holder.start) start = doc.loc!.start.line;
    while (start > 1 && /^\s*(\/\/|\*|\/\*)/.test(lines[start - 2]!)) start--;
    sizes.push({ name: `${relative(root, path)}:${start} ${name}`, lines: node.loc!.end.line - start + 1 });
  };
  walk.ancestor(program, {
    FunctionDeclaration: (node) => measure(node, (node as acorn.FunctionDeclaration).id?.name ?? "(default)"),
    FunctionExpression: (node, _state, ancestors) => named(node, ancestors),
    ArrowFunctionExpression: (node, _state, ancestors) => named(node, ancestors),
  });
  function named(node: acorn.Node, ancestors: acorn.Node[]) {
    const parent = ancestors.at(-2);
    if (parent?.type === "MethodDefinition" || parent?.type === "Property" || parent?.type === "PropertyDefinition") {
      const key = (parent as acorn.MethodDefinition).key;
      return measure(node, key.type === "Identifier" ? key.name : key.type === "PrivateIdentifier" ? `#${key.name}` : "(computed)", parent);
    }
    if (parent?.type === "VariableDeclarator") {
      const id = (parent as acorn.VariableDeclarator).id;
      return measure(node, id.type === "Identifier" ? id.name : "(pattern)", ancestors.at(-3) ?? parent);
    }
    measure(node, "(anonymous)");
  }
  return sizes;
}

test(`every function of src/ has at most ${MAX_FUNCTION_LINES} lines, its comments included`, () => {
  const long = files.flatMap(functionSizes).filter(({ lines }) => lines > MAX_FUNCTION_LINES);
  assert.deepEqual(long, []);
});
