/** Every path the beacon serves; the sidecar contacts these and nothing else. */
export const beaconPaths = {
  verify: "/v1/beacon/verify",
  ingestTraces: "/v1/beacon/ingest-traces",
  metrics: "/v1/beacon/v1/metrics",
  traces: "/v1/beacon/v1/traces",
  logs: "/v1/beacon/v1/logs",
  usageSnapshot: "/v1/beacon/usage-snapshot",
  jwks: "/v1/beacon/jwks.json",
} as const;
