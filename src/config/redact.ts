/** A URL as it may be shown: any user name and password replaced, the rest kept so an operator can check it. */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return url ? "[REDACTED]" : url;
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return url;
  parsed.username = "REDACTED";
  parsed.password = "";
  return parsed.toString();
}
