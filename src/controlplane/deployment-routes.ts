import * as z from "zod";
import { HttpError } from "../errors.ts";
import { Answer, type HttpRequest } from "../http/exchange.ts";
import type { HttpServer } from "../http/server.ts";
import { parseRequest, RequestValidationError } from "../http/validate.ts";
import {
  DeploymentCreate,
  DeploymentPatch,
  IMMUTABLE_SOURCE_CONFIG,
  setFields,
  sourceRevisionConfigProblems,
  type Deployment,
  type Revision,
} from "../protocol/controlplane.ts";
import { DeploymentListQuery, pageAnswer, RevisionListQuery } from "../protocol/controlplane-lists.ts";
import type { ApiKeys } from "../http/api-keys.ts";
import type { Deployer } from "./deployer.ts";
import type { RevisionPipeline } from "./revision-pipeline.ts";
import type { DeploymentStore } from "./store.ts";

export interface DeploymentRouteDeps {
  store: DeploymentStore;
  pipeline: RevisionPipeline;
  deployer: Deployer;
  apiKeys: ApiKeys;
}

const DeploymentPath = z.looseObject({ deployment_id: z.uuid({ message: "must be a UUID" }) });
const RevisionPath = z.looseObject({
  deployment_id: z.uuid({ message: "must be a UUID" }),
  revision_id: z.uuid({ message: "must be a UUID" }),
});

/** DELETE's documented query: `delete_tracing_project` (false by default) has nothing to delete here. */
const DeleteQuery = z.strictObject({
  delete_tracing_project: z.enum(["false"], { message: "not supported by this control plane: it keeps no tracing projects" }).optional(),
});

const secretMap = (secrets: readonly { name: string; value: string }[]) =>
  Object.fromEntries(secrets.map((secret) => [secret.name, secret.value]));

/**
 * What a PATCH changes, checked against the deployment: immutable source_config keys must keep their value, and the
 * new source revision config (the set fields over the current ones) must suit the source. 422 otherwise.
 */
function patchPlan(deployment: Deployment, current: ReturnType<DeploymentStore["config"]>, body: DeploymentPatch) {
  const sourceConfig = body.source_config ? setFields(body.source_config) : undefined;
  const problems: { loc: (string | number)[]; msg: string; type: string }[] = [];
  for (const key of IMMUTABLE_SOURCE_CONFIG) {
    const value = sourceConfig?.[key];
    if (value !== undefined && JSON.stringify(value) !== JSON.stringify(deployment.source_config[key])) {
      problems.push({ loc: ["body", "source_config", key], msg: "cannot be changed once the deployment is created", type: "value_error" });
    }
  }
  const given = body.source_revision_config ? setFields(body.source_revision_config) : {};
  const revisionConfig = Object.keys(given).length > 0 ? { ...current, ...given } : undefined;
  for (const problem of revisionConfig ? sourceRevisionConfigProblems(deployment.source, revisionConfig) : []) {
    problems.push({ loc: ["body", "source_revision_config", problem.field], msg: problem.msg, type: problem.type });
  }
  if (problems.length > 0) throw new RequestValidationError(problems);
  // A field set in source_revision_config, non-null secrets or a resource_spec makes a revision, changed or not (the
  // docs' rule: "setting this field to a non-null value will trigger creation of a new revision").
  const newRevision =
    revisionConfig !== undefined || (body.secrets !== null && body.secrets !== undefined) || sourceConfig?.resource_spec !== undefined;
  return { sourceConfig, revisionConfig, newRevision };
}

/** The deployments API (v2): every route needs the API key (X-Api-Key or Bearer); bodies, queries and paths are checked (422). */
export function registerDeploymentRoutes(server: HttpServer, deps: DeploymentRouteDeps): void {
  const { store, pipeline, deployer, apiKeys } = deps;
  const authorize = (request: HttpRequest) => apiKeys.check(request);
  const found = (request: HttpRequest): Deployment => {
    const { deployment_id: id } = parseRequest(DeploymentPath, request.params, "path");
    const deployment = store.get(id);
    if (!deployment) throw new HttpError("EGRESS_ERR_DEPLOYMENT_NOT_FOUND", `no deployment ${id}`);
    return deployment;
  };

  server.post(
    "/v2/deployments",
    (request) => {
      const body = parseRequest(DeploymentCreate, request.body);
      const deployment = store.create({
        name: body.name,
        source: body.source,
        sourceConfig: body.source_config ? setFields(body.source_config) : {},
        sourceRevisionConfig: setFields(body.source_revision_config),
        secrets: secretMap(body.secrets ?? []),
      });
      void pipeline.kick(deployment.id);
      return new Answer(201, deployment);
    },
    { authorize },
  );

  server.get(
    "/v2/deployments",
    (request) => {
      const query = parseRequest(DeploymentListQuery, request.query, "query");
      const filter = {
        nameContains: query.name_contains,
        statuses: query.status,
        ids: query.deployment_ids,
        deploymentTypes: query.deployment_type,
      };
      return pageAnswer(store.list({ limit: query.limit, offset: query.offset, ...filter }), query.offset);
    },
    { authorize },
  );

  server.get("/v2/deployments/{deployment_id}", (request) => found(request), { authorize });

  server.patch(
    "/v2/deployments/{deployment_id}",
    (request) => {
      const deployment = found(request);
      const body = parseRequest(DeploymentPatch, request.body);
      const plan = patchPlan(deployment, store.config(deployment.id), body);
      const revisionId = store.update(deployment.id, {
        ...(plan.sourceConfig && { sourceConfig: plan.sourceConfig }),
        ...(plan.revisionConfig && { sourceRevisionConfig: plan.revisionConfig }),
        ...(body.secrets && { secrets: secretMap(body.secrets) }),
        newRevision: plan.newRevision,
      });
      if (revisionId) void pipeline.kick(deployment.id);
      return store.get(deployment.id);
    },
    { authorize },
  );

  server.delete(
    "/v2/deployments/{deployment_id}",
    async (request) => {
      const deployment = found(request);
      parseRequest(DeleteQuery, request.query, "query");
      await pipeline.idle(deployment.id);
      const serving = store.serving(deployment.id);
      store.delete(deployment.id);
      // A deployment that never served (CREATE_FAILED, BUILD_FAILED) has a directory and a database role too.
      await deployer.stop(deployment.id, serving);
      return new Answer(204, undefined);
    },
    { authorize },
  );
  registerRevisionRoutes(server, deps, authorize, found);
}

/** A deployment's revisions: list, read one, redeploy one as a new revision. */
function registerRevisionRoutes(
  server: HttpServer,
  deps: DeploymentRouteDeps,
  authorize: (request: HttpRequest) => void,
  found: (request: HttpRequest) => Deployment,
): void {
  const { store, pipeline } = deps;
  const revisionFound = (request: HttpRequest): Revision => {
    const { deployment_id: id, revision_id: revisionId } = parseRequest(RevisionPath, request.params, "path");
    const revision = store.revision(id, revisionId);
    if (!revision) throw new HttpError("EGRESS_ERR_REVISION_NOT_FOUND", `no revision ${revisionId} of deployment ${id}`);
    return revision;
  };

  server.get(
    "/v2/deployments/{deployment_id}/revisions",
    (request) => {
      const deployment = found(request);
      const query = parseRequest(RevisionListQuery, request.query, "query");
      return pageAnswer(store.revisions(deployment.id, { limit: query.limit, offset: query.offset, statuses: query.status }), query.offset);
    },
    { authorize },
  );

  server.get(
    "/v2/deployments/{deployment_id}/revisions/{revision_id}",
    (request) => {
      return revisionFound(request);
    },
    { authorize },
  );

  server.post(
    "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy",
    (request) => {
      const revision = revisionFound(request);
      const id = revision.deployment_id;
      store.addRevision(id, store.revisionConfig(revision.id));
      void pipeline.kick(id);
      // As the docs define it: 200 with the deployment, whose latest_revision_id is the new revision.
      return store.get(id);
    },
    { authorize, body: "none" },
  );
}
