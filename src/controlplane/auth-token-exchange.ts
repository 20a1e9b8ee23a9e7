import { readFileSync } from "node:fs";
import type { Clock } from "../clock.ts";
import { ERRORS, type CodesWith } from "../error-codes.ts";
import { EgressError } from "../errors.ts";
import { AnswerTooLargeError, readCappedText } from "../http/capped-answer.ts";
import type { ControlPlaneConfig } from "./config.ts";

// The OAuth 2.0 authorization code grant's second half (RFC 6749 4.1.3): the setup callback's code for a token.

type Provider = ControlPlaneConfig["auth"]["providers"][string];

/** What a token exchange gave, as sealed in an installation. */
export interface ProviderToken {
  access_token: string;
  token_type?: string | undefined;
  scope?: string | undefined;
  refresh_token?: string | undefined;
  /** Epoch ms, when the provider said the token expires. */
  expires_at?: number | undefined;
}

/**
 * The code could not become a token. The message says what went wrong without anything the provider sent back
 * beyond an HTTP status or an OAuth error code: it is shown to the user and logged.
 */
export class TokenExchangeError extends EgressError {
  /** What the setup callback answers, from the code's entry: 502 when the provider failed, 500 when this control plane did. */
  readonly httpStatus: number;
  constructor(code: CodesWith<{ status: number }>, message: string) {
    super(code, message);
    this.httpStatus = ERRORS[code].status;
  }
}

/** A token endpoint's answer read at most this long: a token response is a few hundred bytes. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** An OAuth error code (RFC 6749 5.2): quoted in a message only when it looks like one. */
const OAUTH_ERROR = /^[\w.-]{1,64}$/;

function clientSecret(provider: Provider): string | undefined {
  if (provider.clientSecretFile === undefined) return provider.clientSecret;
  try {
    // Read at each exchange: a mounted Secret can be rotated without a restart.
    return readFileSync(provider.clientSecretFile, "utf8").trim();
  } catch {
    throw new TokenExchangeError(
      "EGRESS_ERR_CLIENT_SECRET_UNREADABLE",
      `the client secret file ${provider.clientSecretFile} could not be read`,
    );
  }
}

/** Why fetch failed, in a few words (a system error code when there is one). */
function networkReason(err: unknown, timeoutMs: number): string {
  if (err instanceof DOMException && err.name === "TimeoutError") return `did not answer within ${timeoutMs} ms`;
  const cause = err instanceof Error ? (err.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  const detail =
    typeof cause?.code === "string" ? cause.code : typeof cause?.message === "string" ? cause.message.slice(0, 80) : "network error";
  return `could not be reached (${detail})`;
}

async function post(provider: Provider, form: URLSearchParams, timeoutMs: number): Promise<{ status: number; body: unknown }> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(provider.tokenUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: form,
      // A redirect would carry the code and the client secret somewhere not configured.
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await readCappedText(response, MAX_RESPONSE_BYTES, provider.tokenUrl);
  } catch (err) {
    if (err instanceof AnswerTooLargeError) {
      throw new TokenExchangeError(
        "EGRESS_ERR_TOKEN_EXCHANGE_RESPONSE",
        `the token endpoint's answer is larger than ${MAX_RESPONSE_BYTES} bytes`,
      );
    }
    throw new TokenExchangeError("EGRESS_ERR_TOKEN_EXCHANGE_NETWORK", `the token endpoint ${networkReason(err, timeoutMs)}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, body };
}

/** Exchanges `code` at the provider's token endpoint; throws a TokenExchangeError unless a token comes back. */
export async function exchangeCode(provider: Provider, code: string, options: { timeoutMs: number; now: Clock }): Promise<ProviderToken> {
  const form = new URLSearchParams({ grant_type: "authorization_code", code, client_id: provider.clientId });
  const secret = clientSecret(provider);
  if (secret !== undefined) form.set("client_secret", secret);
  const { status, body } = await post(provider, form, options.timeoutMs);
  const fields = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : undefined;
  // Some providers (GitHub) answer 200 with an OAuth error instead of a token.
  const oauthError = typeof fields?.error === "string" && OAUTH_ERROR.test(fields.error) ? ` (error ${fields.error})` : "";
  if (status !== 200)
    throw new TokenExchangeError("EGRESS_ERR_TOKEN_EXCHANGE_REFUSED", `the token endpoint answered HTTP ${status}${oauthError}`);
  if (!fields) throw new TokenExchangeError("EGRESS_ERR_TOKEN_EXCHANGE_RESPONSE", "the token endpoint's answer is not a JSON object");
  if (typeof fields.access_token !== "string" || fields.access_token === "") {
    throw new TokenExchangeError("EGRESS_ERR_TOKEN_EXCHANGE_RESPONSE", `the token endpoint's answer has no access_token${oauthError}`);
  }
  const text = (key: string) => (typeof fields[key] === "string" ? fields[key] : undefined);
  const expiresIn = typeof fields.expires_in === "number" && fields.expires_in > 0 ? fields.expires_in : undefined;
  return {
    access_token: fields.access_token,
    token_type: text("token_type"),
    scope: text("scope"),
    refresh_token: text("refresh_token"),
    expires_at: expiresIn === undefined ? undefined : options.now() + expiresIn * 1000,
  };
}
