import { createHash, type KeyObject } from "node:crypto";
import { decodeJwt } from "jose";
import pRetry from "p-retry";
import type { Logger } from "pino";
import type { Clock, SetClockTimeout } from "../../clock.ts";
import { beaconPaths } from "../../protocol/beacon-paths.ts";
import { describeRemoteError, safeCode } from "../../remote-answer.ts";
import { LicenseClaims, type VerifyResponse } from "../../protocol/license.ts";
import type { LicenseStatus } from "../../protocol/local-api.ts";
import { answerProblem, beaconAnswers } from "../egress/answer-rules.ts";
import type { BeaconResponse, BeaconTransport } from "../egress/beacon-client.ts";
import type { Outbox } from "../storage/outbox.ts";
import { backoff } from "../egress/backoff.ts";
import { checkLicenseToken } from "./token-check.ts";

const CACHE_KEY = "license.token";
/** Verify again this long before the token expires, so billing never waits on a verification. */
export const RENEW_BEFORE_EXPIRY_MS = 5 * 60_000;

interface CachedToken {
  token: string;
  verifiedAt: number;
  /** SHA-256 of the license key the token was issued for: a changed key ignores the cache. */
  keyHash: string;
}

/**
 * The license id of the token the last verification cached, or null when none was ever cached (`export` reads it
 * beside a running sidecar). Read without checking the signature again: it was checked when it was cached.
 */
export function cachedLicenseId(outbox: Outbox): string | null {
  const cached = outbox.kv.get(CACHE_KEY);
  if (!cached) return null;
  const claims = LicenseClaims.pick({ sub: true }).safeParse(decodeJwt((JSON.parse(cached) as CachedToken).token));
  return claims.success ? claims.data.sub : null;
}

/** The beacon refused the license (403): not tried again until the next round. */
class LicenseRefused extends Error {}
/** The beacon's answer (its status, its body, its token) was not a license: tried again with backoff. */
class LicenseAnswerFailed extends Error {}

export interface OnlineLicenseOptions {
  client: BeaconTransport;
  licenseKey: string;
  outbox: Outbox;
  intervalMs: number;
  graceMs: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  vendorKey?: KeyObject;
  logger: Logger;
  now?: Clock;
  /** setTimeout on `now`'s clock (setTimeout itself unless a test runs a faster clock). */
  setClockTimeout?: SetClockTimeout;
}

/**
 * Online license: verified with the beacon at start and every `intervalMs` (and before the token expires).
 * The token is cached in the outbox database so a restart works at once. The state is derived, not stored:
 * invalid when the beacon refused the key since the last success; valid while the token is unexpired;
 * grace while the last success is within `graceMs`; else unverified.
 */
export class OnlineLicense {
  readonly #o: OnlineLicenseOptions;
  readonly #now: Clock;
  readonly #setClockTimeout: SetClockTimeout;
  readonly #keyHash: string;
  readonly #stopping = new AbortController();
  #token: string | null = null;
  #claims: LicenseClaims | null = null;
  #verifiedAt: number | null = null;
  #refusedAt: number | null = null;
  /** When the last verification round ended, whatever its outcome: the next never starts sooner than minBackoff after. */
  #lastRoundAt: number | null = null;
  #lastError: string | null = null;
  #nextRound: NodeJS.Timeout | undefined;
  #loop: Promise<void> | null = null;
  /** Settled once start-up has a token to send with, or the first verify has answered (or failed) without one. */
  readonly #firstAttempt = Promise.withResolvers<void>();

  constructor(options: OnlineLicenseOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#setClockTimeout = options.setClockTimeout ?? setTimeout;
    this.#keyHash = createHash("sha256").update(options.licenseKey).digest("hex");
  }

  /** Loads a cached token when it is still good, then verifies in the background: never blocks start-up. */
  async start(): Promise<void> {
    const cached = this.#o.outbox.kv.get(CACHE_KEY);
    if (cached) {
      const entry = JSON.parse(cached) as CachedToken;
      const check =
        entry.keyHash === this.#keyHash ? await checkLicenseToken(entry.token, this.#o.vendorKey, new Date(this.#now())) : undefined;
      if (check?.ok) {
        this.#accept(entry.token, check.claims, entry.verifiedAt);
        this.#o.logger.info(
          { licenseId: check.claims.sub, expiresAt: new Date(check.claims.exp * 1000).toISOString() },
          "license token loaded from cache",
        );
      } else if (entry.keyHash === this.#keyHash) {
        this.#verifiedAt = entry.verifiedAt; // an expired token still dates the last success, for the grace period
      }
    }
    if (this.#token) this.#firstAttempt.resolve();
    this.#schedule(this.#token ? this.#nextVerifyDelay() : 0);
  }

  /**
   * Resolves once a token loaded from the cache or the first verify attempt (whatever its outcome) lets the shippers
   * start: sending before it would only earn 401s from the beacon (and "stream failing" in the log) on every start.
   */
  firstAttempt(): Promise<void> {
    return this.#firstAttempt.promise;
  }

  /** The current token, while unexpired. */
  token(): string | undefined {
    return this.#claims && this.#claims.exp * 1000 > this.#now() ? this.#token! : undefined;
  }

  /** The beacon rejected the token (401): drop it and verify as soon as minBackoff allows (401s come per batch). */
  verifySoon(): void {
    this.#token = null;
    this.#claims = null;
    if (!this.#loop) this.#schedule(this.#notBefore() - this.#now());
  }

  status(): LicenseStatus {
    const now = this.#now();
    const state =
      this.#refusedAt !== null // cleared by the next success
        ? "invalid"
        : this.token()
          ? "valid"
          : this.#verifiedAt !== null && now - this.#verifiedAt <= this.#o.graceMs
            ? "grace"
            : "unverified";
    return {
      mode: "online",
      state,
      licenseId: this.#claims?.sub ?? null,
      organizationId: this.#claims?.org ?? null,
      expiresAt: this.#claims ? new Date(this.#claims.exp * 1000).toISOString() : null,
      licenseExpiresAt: this.#claims?.lexp === undefined ? null : new Date(this.#claims.lexp * 1000).toISOString(),
      verifiedAt: this.#verifiedAt === null ? null : new Date(this.#verifiedAt).toISOString(),
      lastError: this.#lastError,
    };
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#firstAttempt.resolve();
    clearTimeout(this.#nextRound);
    await this.#loop?.catch(() => {});
  }

  #schedule(delayMs: number): void {
    clearTimeout(this.#nextRound);
    if (this.#stopping.signal.aborted) return;
    this.#nextRound = this.#setClockTimeout(
      () => {
        this.#loop = this.#verifyWithRetry().finally(() => {
          this.#loop = null;
          this.#lastRoundAt = this.#now();
          this.#schedule(this.#nextVerifyDelay());
        });
      },
      Math.max(0, delayMs),
    );
    this.#nextRound.unref();
  }

  #notBefore(): number {
    return this.#lastRoundAt === null ? this.#now() : this.#lastRoundAt + this.#o.minBackoffMs;
  }

  /**
   * When to verify next: an interval after the last success, or after a refusal (the vendor may renew the
   * license); a token is renewed once, RENEW_BEFORE_EXPIRY_MS before it expires, and, if the renewal brought no
   * later expiry (the license itself ends then), once more when it expires. Never sooner than minBackoff after
   * the last round, so no answer can make this loop run hot.
   */
  #nextVerifyDelay(): number {
    const now = this.#now();
    let next = (this.#refusedAt ?? this.#verifiedAt ?? now) + this.#o.intervalMs;
    if (this.#claims) {
      const expiresAt = this.#claims.exp * 1000;
      const renewAt = expiresAt - RENEW_BEFORE_EXPIRY_MS;
      next = Math.min(next, this.#verifiedAt !== null && this.#verifiedAt >= renewAt ? expiresAt : renewAt);
    }
    return Math.max(next, this.#notBefore()) - now;
  }

  async #verifyWithRetry(): Promise<void> {
    await pRetry(() => this.#verifyOnce().finally(() => this.#firstAttempt.resolve()), {
      ...backoff(this.#o.minBackoffMs, this.#o.maxBackoffMs, this.#stopping.signal),
      // A refusal is an answer, not an outage: wait for the next scheduled check (the vendor may renew).
      shouldRetry: ({ error }) => !(error instanceof LicenseRefused),
    }).catch(() => {});
  }

  async #verifyOnce(): Promise<void> {
    const { client, licenseKey, logger } = this.#o;
    let response: BeaconResponse;
    try {
      response = await client.post(beaconPaths.verify, JSON.stringify({ license: licenseKey }), {
        signal: this.#stopping.signal,
        audit: { stream: "license", records: 1 },
      });
    } catch (err) {
      this.#failed((err as Error).message);
      throw err;
    }
    if (response.status === 403) {
      const wasRefused = this.#refusedAt !== null;
      this.#refusedAt = this.#now();
      this.#token = null;
      this.#claims = null;
      this.#lastError = `beacon refused the license: ${safeCode(response.body) ?? 403}`;
      if (!wasRefused) logger.error({ reason: this.#lastError }, "license invalid");
      throw new LicenseRefused(this.#lastError);
    }
    const problem =
      response.status >= 200 && response.status < 300
        ? answerProblem(response, beaconAnswers.license, 1)
        : `license verification answered ${describeRemoteError(response)}`;
    if (problem !== undefined) {
      this.#failed(problem);
      throw new LicenseAnswerFailed(problem);
    }
    const { token } = response.body as VerifyResponse; // as beaconAnswers.license checked
    const check = await checkLicenseToken(token, this.#o.vendorKey, new Date(this.#now()));
    if (!check.ok) {
      this.#failed(`the beacon's token is ${check.reason}`);
      throw new LicenseAnswerFailed(this.#lastError!);
    }
    const recovered = this.#lastError !== null;
    this.#accept(token, check.claims, this.#now());
    this.#refusedAt = null;
    this.#lastError = null;
    try {
      this.#o.outbox.kv.set(
        CACHE_KEY,
        JSON.stringify({ token, verifiedAt: this.#verifiedAt!, keyHash: this.#keyHash } satisfies CachedToken),
      );
    } catch (err) {
      // The verification stands (the token is held in memory); only a restart before the next one loses the cache.
      logger.warn({ err }, "license token not cached (the data dir could not be written); a restart verifies again");
    }
    logger.info({ licenseId: check.claims.sub, expiresAt: new Date(check.claims.exp * 1000).toISOString(), recovered }, "license verified");
  }

  #accept(token: string, claims: LicenseClaims, verifiedAt: number): void {
    this.#token = token;
    this.#claims = claims;
    this.#verifiedAt = verifiedAt;
  }

  #failed(reason: string): void {
    if (this.#lastError === null) this.#o.logger.warn({ reason }, "license verification failing; retrying with backoff");
    this.#lastError = reason;
  }
}
