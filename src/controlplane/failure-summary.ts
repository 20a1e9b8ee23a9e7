/** Of a failed check or start, this much of its output goes into the revision's status_message. */
const REPORT_LINES = 10;
const REPORT_CHARS = 2_000;

/**
 * What a status_message may say of a failed check or start: only the command's own error lines (`egress-agent: ...`
 * and the problems indented under it), with every quoted excerpt and every secret value blanked, never other output:
 * a graph module's output, or a parser quoting the file it choked on, may hold anything (a secret, /etc/passwd).
 * The whole output stays in the deployment's owner-only log file for the operator.
 */
export function failureSummary(output: string, secrets: Record<string, string>, logFile: string): string {
  const lines = output.split("\n");
  const own: string[] = [];
  for (let i = lines.findIndex((line) => line.startsWith("egress-agent: ")); i >= 0 && i < lines.length; i++) {
    if (own.length > 0 && !lines[i]!.startsWith("  ")) break;
    own.push(lines[i]!);
  }
  // Without one, what is safe to name of why it died (blanked as they are), so a failure never says nothing.
  if (own.length === 0) own.push(...causeWithoutErrorLine(output));
  let text = own
    .slice(0, REPORT_LINES)
    .map((line) =>
      line
        .trim()
        .replace(/"(?:[^"\\]|\\.)*"/g, '"…"')
        .replace(/'(?:[^'\\]|\\.)*'/g, "'…'")
        .replace(/`[^`]*`/g, "`…`"),
    )
    .join("; ");
  for (const value of Object.values(secrets)) if (value.length >= 4) text = text.replaceAll(value, "[secret]");
  // Part of a secret is as bad as all of it: any word of six characters or more found inside a secret value goes too.
  const values = Object.values(secrets).filter((value) => value.length >= 6);
  text = text.replace(/[^\s"'`:;,()[\]{}=]{6,}/g, (word) => (values.some((value) => value.includes(word)) ? "[secret]" : word));
  if (text.length > REPORT_CHARS) text = `${text.slice(0, REPORT_CHARS)}...`;
  return `${text || "no error line"} (the whole output is in ${logFile})`;
}

/**
 * A process that died before the CLI could say why: bubblewrap's own line (it could not set up the namespace), or
 * Node's error code, which is code-shaped (its message and the values around it are not quoted: they may hold anything).
 */
function causeWithoutErrorLine(output: string): string[] {
  const bwrap = /^bwrap: .*/m.exec(output)?.[0];
  if (bwrap) return [bwrap];
  const code = /\bcode: '([A-Z][A-Z0-9_]{2,63})'/.exec(output)?.[1] ?? /^\w*Error \[([A-Z][A-Z0-9_]{2,63})\]/m.exec(output)?.[1];
  if (!code) return [];
  // Node's permission model names the kind of access it refused (`permission: 'FileSystemRead'`).
  const permission = /\bpermission: '([A-Za-z]+)'/.exec(output)?.[1];
  return [
    permission
      ? `no error line; Node's permission model refused a ${permission} access (${code})`
      : `no error line; Node failed with ${code}`,
  ];
}
