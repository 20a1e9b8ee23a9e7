/** The params of `path` when it matches a route's `segments`, its path split at `/` (a `{name}` segment takes any one non-empty segment). */
export function matchSegments(segments: readonly string[], path: string): Record<string, string> | undefined {
  const parts = path.split("/");
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, segment] of segments.entries()) {
    const part = parts[i]!;
    if (segment.startsWith("{")) {
      if (part === "") return undefined;
      try {
        params[segment.slice(1, -1)] = decodeURIComponent(part);
      } catch {
        return undefined; // a malformed %-escape matches nothing: 404
      }
    } else if (segment !== part) return undefined;
  }
  return params;
}
