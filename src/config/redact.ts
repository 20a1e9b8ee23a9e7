/** Query parameters that carry credentials (`?password=`, `?sslpassword=`, `?api_key=`, `?token=`, `?X-Amz-Signature=`). */
const SECRET_PARAM = /pass|pwd|secret|token|key|auth|credential|signature|sig$/i;

/**
 * A URL as it may be shown: any user name and password, and the values of query parameters that carry
 * credentials, replaced; the rest kept so an operator can check it.
 */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return url ? "[REDACTED]" : url;
  const parsed = new URL(url);
  const secretParams = [...parsed.searchParams.keys()].filter((name) => SECRET_PARAM.test(name));
  if (!parsed.username && !parsed.password && secretParams.length === 0) return url;
  if (parsed.username || parsed.password) {
    parsed.username = "REDACTED";
    parsed.password = "";
  }
  for (const name of new Set(secretParams)) parsed.searchParams.set(name, "REDACTED");
  return parsed.toString();
}
