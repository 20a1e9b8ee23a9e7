import packageJson from "../package.json" with { type: "json" };

/** This build's version, as package.json names it: the sidecar's User-Agent and its export files carry it. */
export const EGRESS_VERSION: string = packageJson.version;
