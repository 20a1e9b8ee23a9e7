import type * as z from "zod";
import { EgressError } from "../errors.ts";
import { keyedJsonCall } from "../http/keyed-call.ts";
import { MiB } from "../http/capped-answer.ts";
import { Deployment, FAILED_REVISION_STATUSES, Revision, type DeploymentCreate, type DeploymentPatch } from "../protocol/controlplane.ts";
import { Page } from "../protocol/controlplane-lists.ts";

/** A control plane call that failed: the answer's status and detail (a 422's field list included). */
export class ControlPlaneError extends EgressError {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super("EGRESS_ERR_CONTROL_PLANE", message);
    this.status = status;
  }
}

/** A wait that ended without DEPLOYED: the revision failed (its status named), or time ran out. */
export class DeployWaitError extends EgressError {
  readonly revision: Revision | undefined;
  constructor(message: string, revision?: Revision) {
    super("EGRESS_ERR_DEPLOY", message);
    this.revision = revision;
  }
}

/**
 * The most of one control plane answer read: the largest is a page of 100 deployments, each a few KiB (its source
 * config with two 4 KiB commands, URLs, its secrets' names): under 2 MiB, so 8 MiB is room, not an invitation.
 */
export const CONTROL_PLANE_ANSWER_CAP = 8 * MiB;

const DeploymentPage = Page(Deployment);
const RevisionPage = Page(Revision);

/** Answers of a control plane that is restarting or behind a proxy that lost it: worth asking again. */
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/** Filters of the deployments list. */
interface DeploymentQuery {
  nameContains?: string | undefined;
  status?: string | undefined;
}

/**
 * Walks a list as the docs say: from offset 0, each request passes back the `offset` the last answer gave, until a
 * page comes back empty. An answer with items whose offset does not move past the one asked for (a control plane
 * that echoes the request) would read the same page forever: it is an error instead. An item seen twice (one created
 * while paging shifts the newest-first list) is kept once. The result's offset is where the empty page was.
 */
export async function listPages<T extends { id: string }>(
  page: (offset: number) => Promise<{ resources: T[]; offset: number }>,
): Promise<{ resources: T[]; offset: number }> {
  const seen = new Map<string, T>();
  let offset = 0;
  for (;;) {
    const answer = await page(offset);
    if (answer.resources.length === 0) return { resources: [...seen.values()], offset };
    if (answer.offset <= offset)
      throw new ControlPlaneError(`a list answered offset ${answer.offset} for the page at ${offset}: it does not lead to a next page`);
    for (const item of answer.resources) if (!seen.has(item.id)) seen.set(item.id, item);
    offset = answer.offset;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The deployments API (v2) for CI/CD: every call with X-Api-Key; answers parsed with the shared schemas. */
export class ControlPlaneClient {
  readonly #baseUrl: string;
  readonly #apiKey: string;

  constructor(options: { baseUrl: string; apiKey: string }) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
  }

  async #call<S extends z.ZodType>(method: string, path: string, schema: S | undefined, body?: unknown): Promise<z.output<S>> {
    const call = {
      baseUrl: this.#baseUrl,
      apiKey: this.#apiKey,
      method,
      path,
      body,
      timeoutMs: 30_000,
      capBytes: CONTROL_PLANE_ANSWER_CAP,
    };
    // A refusal is said by its status, code and a 422's fields only: an echoing proxy or wrong URL would echo the
    // body's deployment secrets, and its text would reach a CI log.
    const parsed = await keyedJsonCall(call, (failure) => {
      if (failure.kind === "unreachable")
        return new ControlPlaneError(`cannot reach the control plane at ${this.#baseUrl} (${failure.cause})`);
      if (failure.kind === "unreadable") return new ControlPlaneError(`${method} ${path}: ${failure.reason}`, failure.status);
      if (failure.kind === "refused") return new ControlPlaneError(`${method} ${path} answered ${failure.said}`, failure.status);
      return new ControlPlaneError(`${method} ${path} answered ${failure.status} with something that is not JSON`, failure.status);
    });
    return schema ? schema.parse(parsed) : (undefined as z.output<S>);
  }

  create(body: z.input<typeof DeploymentCreate>): Promise<Deployment> {
    return this.#call("POST", "/v2/deployments", Deployment, body);
  }

  get(id: string): Promise<Deployment> {
    return this.#call("GET", `/v2/deployments/${encodeURIComponent(id)}`, Deployment);
  }

  /** One page; its `offset` is where the next one starts. `status`: deployment statuses, comma-separated (the docs' form). */
  list(query: DeploymentQuery & { limit?: number; offset?: number } = {}): Promise<{ resources: Deployment[]; offset: number }> {
    const params = new URLSearchParams();
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    if (query.offset !== undefined) params.set("offset", String(query.offset));
    if (query.nameContains !== undefined) params.set("name_contains", query.nameContains);
    if (query.status !== undefined) params.set("status", query.status);
    const search = params.size > 0 ? `?${params}` : "";
    return this.#call("GET", `/v2/deployments${search}`, DeploymentPage);
  }

  /** Every deployment the query matches, newest first: pages of 100 walked as the docs say (listPages). */
  async listAll(query: DeploymentQuery = {}): Promise<{ resources: Deployment[]; offset: number }> {
    return listPages((offset) => this.list({ ...query, limit: 100, offset }));
  }

  /** Every revision of a deployment, newest first (listPages). */
  async revisionsAll(id: string): Promise<{ resources: Revision[]; offset: number }> {
    return listPages((offset) => this.revisions(id, { limit: 100, offset }));
  }

  update(id: string, patch: z.input<typeof DeploymentPatch>): Promise<Deployment> {
    return this.#call("PATCH", `/v2/deployments/${encodeURIComponent(id)}`, Deployment, patch);
  }

  async delete(id: string): Promise<void> {
    await this.#call("DELETE", `/v2/deployments/${encodeURIComponent(id)}`, undefined);
  }

  revisions(id: string, page: { limit?: number; offset?: number } = {}): Promise<{ resources: Revision[]; offset: number }> {
    const search = new URLSearchParams(Object.entries(page).map(([k, v]): [string, string] => [k, String(v)]));
    return this.#call("GET", `/v2/deployments/${encodeURIComponent(id)}/revisions${search.size > 0 ? `?${search}` : ""}`, RevisionPage);
  }

  revision(id: string, revisionId: string): Promise<Revision> {
    return this.#call("GET", `/v2/deployments/${encodeURIComponent(id)}/revisions/${encodeURIComponent(revisionId)}`, Revision);
  }

  /** The deployment, whose latest_revision_id is the new revision (200, as the docs define it). */
  redeploy(id: string, revisionId: string): Promise<Deployment> {
    return this.#call("POST", `/v2/deployments/${encodeURIComponent(id)}/revisions/${encodeURIComponent(revisionId)}/redeploy`, Deployment);
  }

  /**
   * The quick-start's last step: polls the deployment's latest revision (following a newer one if it appears)
   * until it is DEPLOYED. A *_FAILED, SKIPPED or INTERRUPTED revision, or the timeout, is a DeployWaitError. The
   * poll starts every `pollMs` (1 s) and slows, doubling, to `maxPollMs` (10 s) while nothing changes; a control
   * plane that is briefly away (unreachable, 502, 503, 504: a restart) is asked again on that schedule until the
   * timeout, while any other refusal (401, 404, ...) ends the wait at once.
   */
  async waitDeployed(
    id: string,
    options: {
      timeoutMs: number;
      pollMs?: number;
      maxPollMs?: number;
      revisionId?: string | undefined;
      onStatus?: (revision: Revision) => void;
    },
  ): Promise<{ deployment: Deployment; revision: Revision }> {
    const deadline = Date.now() + options.timeoutMs;
    const firstPollMs = options.pollMs ?? 1_000;
    let pollMs = firstPollMs;
    let lastStatus: string | undefined;
    let last: Revision | undefined;
    for (;;) {
      let revision: Revision;
      try {
        revision = await this.revision(id, options.revisionId ?? (await this.get(id)).latest_revision_id);
      } catch (err) {
        const away = err instanceof ControlPlaneError && (err.status === undefined || TRANSIENT_STATUSES.has(err.status));
        if (!away || Date.now() > deadline) throw err;
        await sleep(pollMs);
        pollMs = Math.min(pollMs * 2, options.maxPollMs ?? 10_000);
        continue;
      }
      last = revision;
      const status = `${revision.id}:${revision.status}`;
      if (status !== lastStatus) {
        options.onStatus?.(revision);
        pollMs = firstPollMs;
      }
      lastStatus = status;
      if (revision.status === "DEPLOYED") return { deployment: await this.get(id), revision };
      if (FAILED_REVISION_STATUSES.has(revision.status) || revision.status === "SKIPPED" || revision.status === "INTERRUPTED") {
        // A newer revision took over: follow it instead of failing (unless this very revision was asked for).
        const latest = (await this.get(id)).latest_revision_id;
        if (latest === revision.id || options.revisionId !== undefined) {
          throw new DeployWaitError(
            `revision ${revision.id} ended ${revision.status}${revision.status_message ? `: ${revision.status_message}` : ""}`,
            revision,
          );
        }
        continue;
      }
      if (Date.now() > deadline) {
        const waited = options.timeoutMs < 1_000 ? `${options.timeoutMs} ms` : `${Math.round(options.timeoutMs / 1000)} s`;
        throw new DeployWaitError(`revision ${last.id} is still ${last.status} after ${waited}`, last);
      }
      await sleep(pollMs);
      pollMs = Math.min(pollMs * 2, options.maxPollMs ?? 10_000);
    }
  }
}
