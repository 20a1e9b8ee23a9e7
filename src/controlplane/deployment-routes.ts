import * as z from "zod";
import { HttpError } from "../errors.ts";
import { Answer, type HttpRequest } from "../http/exchange.ts";
import type { HttpServer } from "../http/server.ts";
import { parseRequest, RequestValidationError } from "../http/validate.ts";
import { DeploymentCreate, DeploymentListQuery, DeploymentPatch, ListQuery, type Deployment } from "../protocol/controlplane.ts";
import type { ApiKeys } from "./api-keys.ts";
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
const RevisionPath = z.looseObject({ deployment_id: z.uuid({ message: "must be a UUID" }), revision_id: z.uuid({ message: "must be a UUID" }) });

const secretMap = (secrets: readonly { name: string; value: string }[]) => Object.fromEntries(secrets.map((secret) => [secret.name, secret.value]));

/** The deployments API (v2): every route needs X-Api-Key; bodies, queries and paths are checked (422). */
export function registerDeploymentRoutes(server: HttpServer, deps: DeploymentRouteDeps): void {
  const { store, pipeline, deployer, apiKeys } = deps;
  const authorize = (request: HttpRequest) => apiKeys.check(request);
  const found = (request: HttpRequest): Deployment => {
    const { deployment_id: id } = parseRequest(DeploymentPath, request.params, "path");
    const deployment = store.get(id);
    if (!deployment) throw new HttpError(404, "ERR_DEPLOYMENT_NOT_FOUND", `no deployment ${id}`);
    return deployment;
  };

  server.post(
    "/v2/deployments",
    (request) => {
      const body = parseRequest(DeploymentCreate, request.body);
      const deployment = store.create({
        name: body.name,
        source: body.source,
        sourceConfig: body.source_config ?? {},
        sourceRevisionConfig: body.source_revision_config,
        secrets: secretMap(body.secrets),
      });
      void pipeline.kick(deployment.id);
      return new Answer(201, deployment);
    },
    { authorize },
  );

  server.get("/v2/deployments", (request) => {
    const query = parseRequest(DeploymentListQuery, request.query, "query");
    return { resources: store.list({ limit: query.limit, offset: query.offset, nameContains: query.name_contains, status: query.status }), offset: query.offset };
  }, { authorize });

  server.get("/v2/deployments/{deployment_id}", (request) => found(request), { authorize });

  server.patch(
    "/v2/deployments/{deployment_id}",
    (request) => {
      const deployment = found(request);
      const body = parseRequest(DeploymentPatch, request.body);
      const config = body.source_revision_config;
      const key = deployment.source === "local" ? "langgraph_config_path" : "image_uri";
      if (config !== undefined && config[key] === undefined) {
        throw new RequestValidationError([{ loc: ["body", "source_revision_config", key], msg: `Field required for source ${deployment.source}`, type: "missing" }]);
      }
      const revisionId = store.update(deployment.id, { name: body.name, sourceRevisionConfig: config, secrets: body.secrets && secretMap(body.secrets) });
      if (revisionId) void pipeline.kick(deployment.id);
      return store.get(deployment.id);
    },
    { authorize },
  );

  server.delete(
    "/v2/deployments/{deployment_id}",
    async (request) => {
      const deployment = found(request);
      await pipeline.idle(deployment.id);
      const serving = store.serving(deployment.id);
      store.delete(deployment.id);
      if (serving) await deployer.stop(deployment.id, serving);
      return new Answer(204, undefined);
    },
    { authorize },
  );

  server.get("/v2/deployments/{deployment_id}/revisions", (request) => {
    const deployment = found(request);
    const query = parseRequest(ListQuery, request.query, "query");
    return { resources: store.revisions(deployment.id, query), offset: query.offset };
  }, { authorize });

  server.get("/v2/deployments/{deployment_id}/revisions/{revision_id}", (request) => {
    const { deployment_id: id, revision_id: revisionId } = parseRequest(RevisionPath, request.params, "path");
    const revision = store.revision(id, revisionId);
    if (!revision) throw new HttpError(404, "ERR_REVISION_NOT_FOUND", `no revision ${revisionId} of deployment ${id}`);
    return revision;
  }, { authorize });

  server.post(
    "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy",
    (request) => {
      const { deployment_id: id, revision_id: revisionId } = parseRequest(RevisionPath, request.params, "path");
      const revision = store.revision(id, revisionId);
      if (!revision) throw new HttpError(404, "ERR_REVISION_NOT_FOUND", `no revision ${revisionId} of deployment ${id}`);
      const newId = store.addRevision(id, revision.source_revision_config);
      void pipeline.kick(id);
      return new Answer(201, store.revision(id, newId));
    },
    { authorize, body: "none" },
  );
}
