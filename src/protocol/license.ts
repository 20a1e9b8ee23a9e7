import * as z from "zod";
import { LicenseKey } from "./common.ts";

/** The `iss` of every token the beacon signs, and what the sidecar requires of one: part of the wire contract. */
export const TOKEN_ISSUER = "egress-beacon";

/** POST /v1/beacon/verify request. */
export const VerifyRequest = z.object({
  license: LicenseKey,
});
export type VerifyRequest = z.infer<typeof VerifyRequest>;

/** POST /v1/beacon/verify response: a short-lived ES256 JWT. */
export const VerifyResponse = z.object({ token: z.string().min(1) });
export type VerifyResponse = z.infer<typeof VerifyResponse>;

/** A license's id, as the beacon's config names it and its tokens carry it in `sub`. */
export const LicenseId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: "must be letters, digits, '.', '_' or '-'" });

/**
 * Claims the beacon puts in a license token, beyond the registered ones (sub, iat, exp, iss). `sub` and `org` are
 * held to their shapes: a sidecar without a vendor key reads an unsigned token's claims into its status and log.
 */
export const LicenseClaims = z.object({
  sub: LicenseId,
  org: z.uuid(),
  seats: z.int(),
  exp: z.int(),
  iat: z.int(),
  /** The license's own expiry (seconds): a token's exp is an hour away, the license's may be years (beacons since 0.1). */
  lexp: z.int().optional(),
  /** The tag of the license key the token was had with (beacons since 0.1's vendor side): a replaced key's are refused. */
  kt: z.string().max(64).optional(),
  /** Set on offline licenses: long-lived, checked locally by an air-gapped sidecar. */
  offline: z.literal(true).optional(),
});
export type LicenseClaims = z.infer<typeof LicenseClaims>;
