import { isUtf8 } from "node:buffer";
import type { Clock } from "../clock.ts";
import { EgressError, HttpError } from "../errors.ts";
import { beaconPaths } from "../protocol/beacon-paths.ts";
import { VerifyRequest, type VerifyResponse } from "../protocol/license.ts";
import { OTLP_SIGNALS, otlpSignals, PROTOBUF_MEDIA_TYPE, type OtlpSignal } from "../protocol/otlp.ts";
import { OtlpRequestShapeError, parseExport } from "../protocol/otlp-request.ts";
import { IngestTracesRequest, type IngestTracesResponse, type TraceTransaction } from "../protocol/trace-transaction.ts";
import { fastIngestTracesRequest } from "../protocol/trace-transaction-fast.ts";
import { UsageSnapshot, type UsageSnapshotResponse } from "../protocol/usage-snapshot.ts";
import { databaseUnavailable } from "../database-unavailable.ts";
import { GroupCommit } from "../group-commit.ts";
import { mediaType, parseJsonText } from "../http/body.ts";
import { Answer, type HttpRequest } from "../http/exchange.ts";
import { otlpErrorAnswer } from "../http/otlp-http.ts";
import type { HttpServer } from "../http/server.ts";
import { parseRequest, RequestValidationError } from "../http/validate.ts";
import type { Registry } from "prom-client";
import type { Authenticator } from "./authenticate.ts";
import { InstanceRecorder } from "./instance-recorder.ts";
import type { ForwardMetrics } from "./forward/metrics.ts";
import type { ForwardQueue } from "./forward/queue.ts";
import type { License } from "./licenses.ts";
import type { BeaconStorage } from "./storage.ts";
import type { TokenIssuer } from "./token-issuer.ts";

export interface BeaconDeps {
  store: BeaconStorage;
  auth: Authenticator;
  tokens: TokenIssuer;
  now: Clock;
  /** How often one instance's sighting is written at most (instance-recorder.ts). */
  instanceRecordIntervalMs?: number;
  /** A new instance was past its license's hourly cap and not recorded (the beacon's metric counts it). */
  onInstanceRefused?: () => void;
  /** Set when telemetry.forward is on: stored OTLP batches are queued for it, and it is told of each. */
  forwarder?: { wake(): void } | undefined;
  /** A license was verified (its lastVerifiedAt). */
  onVerified?: (licenseId: string) => void;
}

/**
 * The largest verify body: a license key and its JSON (the sidecar sends about a hundred bytes). Anyone may call
 * verify, so what it may hold is bounded by size here and by its own body budget (`http.verifyBodyBytesInFlight`).
 */
const VERIFY_BODY_LIMIT = 4096;

export function registerBeaconRoutes(app: HttpServer, deps: BeaconDeps): void {
  const { store, auth, now } = deps;
  // Every authenticated request says which instance sent it (X-Egress-Instance-Id): recorded, throttled.
  const instances = new InstanceRecorder(store.instances, {
    now,
    intervalMs: deps.instanceRecordIntervalMs,
    onRefused: deps.onInstanceRefused,
  });
  // Concurrent ingests share one commit (a sidecar keeps several batches in flight).
  const ingests = new GroupCommit<{ licenseId: string; transactions: readonly TraceTransaction[] }, number>(
    (jobs) => store.ingest(jobs, new Date(now())),
    databaseUnavailable,
  );

  registerVerifyRoute(app, deps, instances);

  // A bearer token, when sent, is checked from the headers before any body is read; the license key in the body
  // (the interface's own credential, docs/PROTOCOL.md) is checked after. Telemetry carries no key: the token is its
  // only credential. A billing or usage body with a valid token is charged to the billing budget and served from the
  // connection reserve; one without, to the anonymous budget, and not from the reserve: anyone can send those.
  const senders = new WeakMap<HttpRequest, License | undefined>();
  const authenticated = (request: HttpRequest) => senders.get(request) !== undefined;
  const billingBudget = (request: HttpRequest) => (authenticated(request) ? "billing" : "anonymous");
  const optionalBearer = async (request: HttpRequest) => {
    senders.set(request, await auth.bearer(request));
    return authenticated(request);
  };
  const requiredBearer = async (request: HttpRequest) => {
    const license = await auth.bearer(request);
    if (!license)
      throw new HttpError(
        "EGRESS_ERR_TOKEN_REQUIRED",
        "operational telemetry needs 'Authorization: Bearer <token>' from /v1/beacon/verify",
      );
    senders.set(request, license);
    return true;
  };

  app.post(
    beaconPaths.ingestTraces,
    async (request): Promise<IngestTracesResponse> => {
      const body = parseRequest(IngestTracesRequest, request.body, "body", fastIngestTracesRequest);
      const license = auth.licenseAndBearer(body.license, senders.get(request));
      await instances.seen(request, license);
      const inserted = await ingests.submit({ licenseId: license.id, transactions: body.trace_transactions });
      request.log.info({ licenseId: license.id, received: body.trace_transactions.length, inserted }, "trace transactions ingested");
      return { inserted_count: inserted };
    },
    { authorize: optionalBearer, reserved: authenticated, budget: billingBudget },
  );

  for (const signal of OTLP_SIGNALS) {
    registerOtlpRoute(app, signal, { store, now, forwarder: deps.forwarder, senders, requiredBearer, instances });
  }

  app.post(
    beaconPaths.usageSnapshot,
    async (request): Promise<UsageSnapshotResponse> => {
      const body = parseRequest(UsageSnapshot, request.body);
      const license = auth.licenseAndBearer(body.license_key, senders.get(request));
      await instances.seen(request, license);
      const { from_timestamp: from, to_timestamp: to } = body;
      const inserted = await store.insertUsageSnapshot(license.id, from, to, body.measures, new Date(now()));
      request.log.info({ licenseId: license.id, from, to, inserted }, "usage snapshot ingested");
      return { inserted_count: inserted };
    },
    { authorize: optionalBearer, reserved: authenticated, budget: billingBudget },
  );

  registerKeyAndHealthRoutes(app, deps);
}

/** POST /v1/beacon/verify: a license key for a short-lived token; anyone may call it, so its body is small. */
function registerVerifyRoute(app: HttpServer, deps: BeaconDeps, instances: InstanceRecorder): void {
  const { auth, tokens } = deps;
  app.post(
    beaconPaths.verify,
    async (request): Promise<VerifyResponse> => {
      const body = parseRequest(VerifyRequest, request.body);
      const license = auth.license(body.license, { requireUnexpired: true });
      await instances.seen(request, license);
      request.log.info({ licenseId: license.id }, "license verified");
      deps.onVerified?.(license.id);
      return { token: await tokens.issue(license) };
    },
    { reserved: true, budget: "verify", bodyLimit: { bytes: VERIFY_BODY_LIMIT } },
  );
}

/** The token signing key's JWKS, liveness and readiness. */
function registerKeyAndHealthRoutes(app: HttpServer, deps: BeaconDeps): void {
  const { store, tokens } = deps;
  app.get(beaconPaths.jwks, async () => tokens.jwks);
  app.get("/healthz", async () => ({ status: "ok" }), { reserved: true, quiet: true });
  // Liveness stays 200 while the database is away (a restart would not bring it back); readiness does not.
  const ready = async () => {
    await store.ready();
    return { ready: true };
  };
  app.get("/readyz", ready, { reserved: true, quiet: true });
}

/**
 * GET /metrics (Prometheus text) on the public listener: only aggregates that name no license or organization (the
 * forwarder's backlog and counts); a 503 while the database is away.
 */
export function registerMetricsRoute(
  app: HttpServer,
  deps: { registry: Registry; forwardMetrics: ForwardMetrics; queue: ForwardQueue; now: Clock },
): void {
  app.get(
    "/metrics",
    async () => {
      await deps.forwardMetrics.refreshBacklog(deps.queue, deps.now());
      return new Answer(200, await deps.registry.metrics(), deps.registry.contentType);
    },
    { quiet: true },
  );
}

/**
 * One telemetry route: OTLP/HTTP JSON or binary protobuf (what a Collector or Fluent Bit sends by default), gzip or
 * deflate too, answered as OTLP/HTTP says in the request's encoding. A protobuf body is decoded into the JSON form and
 * parsed item by item as the sidecar's receiver does: what is stored is the same either way, an item the beacon does
 * not take (a histogram, a malformed span) is a partial success, an empty request a plain 200 that stores nothing,
 * and an undecodable body a 400 google.rpc.Status, as is every other error (401 without a token included).
 */
function registerOtlpRoute(
  app: HttpServer,
  signal: OtlpSignal,
  deps: Pick<BeaconDeps, "store" | "now" | "forwarder"> & {
    senders: WeakMap<HttpRequest, License | undefined>;
    requiredBearer: (request: HttpRequest) => Promise<unknown>;
    instances: InstanceRecorder;
  },
): void {
  const { path, fields } = otlpSignals[signal];
  app.post(
    path,
    async (request) => {
      const license = deps.senders.get(request)!;
      await deps.instances.seen(request, license);
      const protobuf = mediaType(request.headers) === PROTOBUF_MEDIA_TYPE;
      const codec = protobuf ? await import("../protocol/otlp-protobuf.ts") : undefined;
      const { parsed, json } = parseBody(signal, request, codec);
      if (parsed.accepted > 0) {
        // A request parsing left as it was (the sidecar's always are) is stored as its text: no second serialisation,
        // and as the body's own bytes when they are that text (valid UTF-8; decoding would have replaced the rest).
        const body = request.body as Buffer;
        const text = parsed.canonical && json !== undefined ? (isUtf8(body) ? body : json) : JSON.stringify(parsed.request);
        await deps.store.insertOtlp(signal, license.id, parsed.accepted, text, new Date(deps.now()), deps.forwarder !== undefined);
        deps.forwarder?.wake();
      }
      request.log.info(
        { licenseId: license.id, signal, items: parsed.accepted, rejected: parsed.rejected, protobuf },
        "operational telemetry ingested",
      );
      if (parsed.rejected === 0) return codec ? new Answer(200, codec.encodeOtlpResponse(signal), PROTOBUF_MEDIA_TYPE) : {};
      const partialSuccess = {
        rejected: parsed.rejected,
        errorMessage: `${parsed.rejected} item(s) rejected: ${parsed.errors.join("; ")}`,
      };
      return codec
        ? new Answer(200, codec.encodeOtlpResponse(signal, partialSuccess), PROTOBUF_MEDIA_TYPE)
        : { partialSuccess: { [fields.rejected]: partialSuccess.rejected, errorMessage: partialSuccess.errorMessage } };
    },
    {
      authorize: deps.requiredBearer,
      body: { raw: ["application/json", PROTOBUF_MEDIA_TYPE] },
      errors: otlpErrorAnswer,
    },
  );
}

/** The export request in a body, item by item, and a JSON body's text; a body that is not one at all is OTLP's 400. */
function parseBody(signal: OtlpSignal, request: HttpRequest, codec: typeof import("../protocol/otlp-protobuf.ts") | undefined) {
  const body = request.body as Buffer;
  let raw: unknown;
  const json = codec ? undefined : body.toString("utf8");
  try {
    // The protobuf decoder charges its messages to the request as it makes them: 413 or 503 (HttpError) as they are.
    raw = codec ? codec.decodeOtlpProtobuf(signal, body, request.chargeItems, request.itemLimit) : parseJsonText(json!);
  } catch (err) {
    if (err instanceof RequestValidationError) {
      const why = err.detail[0]?.type === "missing" ? "the body is empty" : err.detail[0]?.msg;
      throw new HttpError("EGRESS_ERR_OTLP_JSON", `not an OTLP JSON export request: ${why}`);
    }
    // The protobuf decoder's error (OtlpDecodeError) names the expected message, never the body: the 400 as it is.
    if (err instanceof EgressError && err.code === "EGRESS_ERR_OTLP_PROTOBUF") throw new HttpError(err.code, err.message);
    throw err;
  }
  try {
    return { parsed: parseExport(signal, raw), json };
  } catch (err) {
    if (!(err instanceof OtlpRequestShapeError)) throw err;
    throw new HttpError(codec ? "EGRESS_ERR_OTLP_PROTOBUF" : "EGRESS_ERR_OTLP_JSON", err.message);
  }
}
