/** Forward proxies for beacon traffic (config `proxy.*`, normally from HTTPS_PROXY / HTTP_PROXY / NO_PROXY). */
export interface ProxySettings {
  https: string;
  http: string;
  noProxy: string;
}

/**
 * Whether NO_PROXY exempts `url`, with curl's rules (which Node's built-in proxy support also follows): entries
 * separated by commas or spaces; `*` exempts every host; `example.com`, `.example.com` and `*.example.com` exempt
 * the domain and its subdomains; `host:port` only that port; IP addresses match exactly, or by CIDR prefix.
 */
export function exemptFromProxy(url: URL, noProxy: string): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  for (const raw of noProxy.toLowerCase().split(/[\s,]+/)) {
    if (!raw) continue;
    if (raw === "*") return true;
    const cidr = /^([0-9a-f.:]+)\/(\d{1,3})$/.exec(raw);
    if (cidr) {
      if (inCidr(host, cidr[1]!, Number(cidr[2]))) return true;
      continue;
    }
    // "[::1]:8443", "host:8443" or a bare IPv6 address (several colons, no port).
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(raw);
    const hostPort = bracketed ? null : /^([^:]+):(\d+)$/.exec(raw);
    const entryHost = (bracketed?.[1] ?? hostPort?.[1] ?? raw).replace(/^\*?\./, "");
    const entryPort = bracketed?.[2] ?? hostPort?.[2];
    if (entryPort && entryPort !== port) continue;
    if (host === entryHost || host.endsWith(`.${entryHost}`)) return true;
  }
  return false;
}

function inCidr(host: string, network: string, bits: number): boolean {
  const a = ipv4(host);
  const b = ipv4(network);
  if (!a || !b || bits > 32) return false;
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return (a & mask) >>> 0 === (b & mask) >>> 0;
}

function ipv4(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return null;
  return parts.reduce((sum, p) => sum * 256 + Number(p), 0);
}

/**
 * The proxy a request to `url` goes through, or "" for a direct connection: https through `https` (else `http`),
 * http through `http`, unless NO_PROXY exempts the host. The one decision, used by the client and by `preview`.
 */
export function proxyFor(url: string, proxy: ProxySettings): string {
  const target = new URL(url);
  const via = target.protocol === "https:" ? proxy.https || proxy.http : proxy.http;
  return via && !exemptFromProxy(target, proxy.noProxy) ? via : "";
}
