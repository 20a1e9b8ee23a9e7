// The license key travels in the body of every request to the beacon: over plain http it crosses the network in
// clear. Plain http is kept for what never leaves the machine (a loopback host) unless the operator says otherwise.

/** Whether `hostname` (as URL parses it: IPv4 normalised, IPv6 in brackets) is this machine's loopback. */
function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** The host of an `http://` beacon URL that is not loopback (the key would cross the network in clear), else undefined. */
export function insecureBeaconHost(beaconUrl: string): string | undefined {
  const url = new URL(beaconUrl);
  return url.protocol === "http:" && !isLoopbackHost(url.hostname) ? url.host : undefined;
}
