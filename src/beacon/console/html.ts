/**
 * The console's one way to make HTML: the `html` template tag escapes every value put into it, unless the value is
 * itself made by `html` (or by `svg`, the same tag). Nothing else in the console builds markup, so a license id, an
 * instance's version or a path typed into the address bar reaches the page as text, never as markup.
 */
export class SafeHtml {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text for an element's content or a quoted attribute value: the five characters with meaning in HTML escaped. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** A value as markup: escaped text, or made markup as it is; arrays joined; null, undefined and false are nothing. */
function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  if (value === null || value === undefined || value === false) return "";
  return escapeHtml(String(value));
}

/** html`<td>${text}</td>`: the values escaped, the literal parts kept. Attribute values must be quoted. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  for (const [i, value] of values.entries()) out += render(value) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** A console path with each segment encoded: ids go into URLs as data, never as path syntax. */
export function consolePath(...segments: string[]): string {
  return `/console${segments.map((s) => `/${encodeURIComponent(s)}`).join("")}`;
}
