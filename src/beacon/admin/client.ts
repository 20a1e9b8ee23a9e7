import type * as z from "zod";
import { EgressError } from "../../errors.ts";
import { MiB } from "../../http/capped-answer.ts";
import { keyedJsonCall } from "../../http/keyed-call.ts";
import {
  adminPaths,
  AuditList,
  LicenseCreated,
  LicenseDetail,
  LicenseList,
  licensePath,
  LicenseView,
  RotatedKey,
  UsageRows,
  type LicensePatch,
} from "../../protocol/beacon-admin.ts";

/** An admin call that failed: unreachable, or refused (its status, code and a 422's fields). */
export class BeaconAdminError extends EgressError {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super("EGRESS_ERR_BEACON_ADMIN", message);
    this.status = status;
  }
}

/** What each refusal means for the one who ran the command. */
const HINTS: Record<number, string> = {
  401: "the admin key is missing or not accepted (env BEACON_ADMIN_API_KEY, --api-key-file; the beacon's admin.apiKeys)",
  404: "no such license (beacon licenses list)",
  409: "a license with this id exists already",
  422: "fix the fields named",
};

const notTheAnswer = (method: string, path: string, status: number) =>
  new BeaconAdminError(`${method} ${path} answered ${status} with something that is not the admin API's answer`);

/** The beacon's admin API, for `beacon licenses`: every call with X-Api-Key, answers parsed with the shared schemas. */
export class BeaconAdminClient {
  readonly #url: string;
  readonly #apiKey: string;

  constructor(options: { url: string; apiKey: string }) {
    this.#url = options.url.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
  }

  async #call<S extends z.ZodType>(method: string, path: string, schema: S, body?: unknown): Promise<z.output<S>> {
    const call = { baseUrl: this.#url, apiKey: this.#apiKey, method, path, body, timeoutMs: 30_000, capBytes: 8 * MiB };
    const parsed = await keyedJsonCall(call, (failure) => {
      if (failure.kind === "unreachable")
        return new BeaconAdminError(
          `cannot reach the beacon's admin listener at ${this.#url} (${failure.cause}); check --url and admin.listen`,
        );
      if (failure.kind === "unreadable") return new BeaconAdminError(`${method} ${path}: ${failure.reason}`, failure.status);
      if (failure.kind === "refused") {
        const hint = HINTS[failure.status];
        return new BeaconAdminError(`${method} ${path} answered ${failure.said}${hint ? `: ${hint}` : ""}`, failure.status);
      }
      return notTheAnswer(method, path, failure.status);
    });
    const answer = schema.safeParse(parsed);
    if (!answer.success) throw notTheAnswer(method, path, 200);
    return answer.data;
  }

  create(body: { id: string; organizationId: string; expiresAt: string; seats: number; offlineAllowed?: boolean }) {
    return this.#call("POST", adminPaths.licenses, LicenseCreated, body);
  }

  list() {
    return this.#call("GET", adminPaths.licenses, LicenseList);
  }

  show(id: string) {
    return this.#call("GET", licensePath(adminPaths.license, id), LicenseDetail);
  }

  update(id: string, patch: z.input<typeof LicensePatch>) {
    return this.#call("PATCH", licensePath(adminPaths.license, id), LicenseView, patch);
  }

  revoke(id: string) {
    return this.#call("POST", licensePath(adminPaths.revoke, id), LicenseView);
  }

  rotateKey(id: string) {
    return this.#call("POST", licensePath(adminPaths.rotateKey, id), RotatedKey);
  }

  usage(query: { license?: string | undefined; month?: string | undefined }) {
    const search = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => e[1] !== undefined));
    return this.#call("GET", `${adminPaths.usage}${search.size > 0 ? `?${search}` : ""}`, UsageRows);
  }

  audit(license?: string) {
    return this.#call("GET", `${adminPaths.audit}${license ? `?license=${encodeURIComponent(license)}` : ""}`, AuditList);
  }
}
