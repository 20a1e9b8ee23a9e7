import type { ErrorEntry } from "./entry.ts";

/** The control plane and `deployments`; the beacon's admin listener: see src/error-codes.ts. */
export const CONTROL_PLANE_ERRORS = {
  EGRESS_ERR_API_KEY_MISSING: {
    status: 401,
    meaning: "The request has neither an `X-Api-Key` header nor `Authorization: Bearer` (the control plane, the beacon's admin listener).",
    fix: "Send `X-Api-Key` with one of the service's keys: the control plane's `apiKeys` (env `PLATFORM_API_KEY`), the beacon's `admin.apiKeys` (env `BEACON_ADMIN_API_KEY`).",
  },
  EGRESS_ERR_API_KEY_INVALID: {
    status: 401,
    meaning:
      "The key (`X-Api-Key` or `Authorization: Bearer`) is not one the control plane (or the beacon's admin listener) accepts, or `Authorization` is not `Bearer <key>`.",
    fix: "Use one of its keys (`apiKeys`, env `PLATFORM_API_KEY`; the beacon's `admin.apiKeys`, env `BEACON_ADMIN_API_KEY`), or add this one (`controlplane hash-key` prints its sha256 form).",
  },
  EGRESS_ERR_API_KEY_CONFLICT: {
    status: 401,
    meaning: "`X-Api-Key` and `Authorization: Bearer` carry different keys: neither is chosen.",
    fix: "Send the key in one of the two headers (or the same key in both).",
  },
  EGRESS_ERR_DEPLOYMENT_NOT_FOUND: {
    status: 404,
    meaning: "No deployment has this id (or it was deleted).",
    fix: "List the deployments (`GET /v2/deployments`, `egress-agent deployments list`) for the id.",
  },
  EGRESS_ERR_REVISION_NOT_FOUND: {
    status: 404,
    meaning: "The deployment has no revision with this id.",
    fix: "List its revisions (`egress-agent deployments revisions <deployment_id>`) for the id.",
  },
  EGRESS_ERR_AUTH_PROVIDER_NOT_FOUND: {
    status: 404,
    meaning: "No auth provider has this id.",
    fix: "Configure the provider under `auth.providers`, or use a configured id.",
  },
  EGRESS_ERR_AUTH_REQUEST_NOT_FOUND: {
    status: 404,
    meaning: "No auth request has this id.",
    fix: "Create a new auth request and use the id it answers with.",
  },
  EGRESS_ERR_CLIENT_SECRET_UNREADABLE: {
    status: 500,
    meaning:
      "The setup callback could not read the provider's `clientSecretFile`; the page says the exchange failed, the log has this code.",
    fix: "Check that the file is mounted and readable by the control plane, then start the installation again.",
  },
  EGRESS_ERR_TOKEN_EXCHANGE_NETWORK: {
    status: 502,
    meaning: "The provider's token endpoint could not be reached or did not answer in time; the log has this code.",
    fix: "Check that the control plane can reach `tokenUrl`, then start the installation again.",
  },
  EGRESS_ERR_TOKEN_EXCHANGE_REFUSED: {
    status: 502,
    meaning: "The provider's token endpoint refused the code (an HTTP status other than 200, and its OAuth error when it gave one).",
    fix: "Check the provider's `clientId` and client secret; codes are single-use, so start the installation again.",
  },
  EGRESS_ERR_TOKEN_EXCHANGE_RESPONSE: {
    status: 502,
    meaning: "The token endpoint's answer is not a JSON object with an `access_token`, or is over 64 KiB.",
    fix: "Check that `tokenUrl` is the provider's OAuth token endpoint.",
  },
  EGRESS_ERR_SECRET_KEY: {
    exit: 1,
    meaning:
      "The control plane's secret key (`secrets.key` in its data dir) is not a 32-byte base64 key, or a secret sealed in `controlplane.db` does not open with it (the key was replaced, or the database restored without it). At start the control plane exits 1; a request that needs the secret is answered 500 with this code in the log.",
    fix: "Restore `secrets.key` from the same backup as `controlplane.db`; the secrets sealed under a lost key must be set again.",
  },
  EGRESS_ERR_REVISION_STEP: {
    logOnly: true,
    meaning:
      "A revision's step failed (create, build or deploy): the revision is CREATE_FAILED, BUILD_FAILED or DEPLOY_FAILED, and its status message says why (its graph config missing or failing to load, its agent server not starting, a file of its directory the control plane refuses).",
    fix: "Read the revision's status message (`egress-agent deployments revisions`), fix the source, its secrets or the config it names, and update the deployment again.",
  },
  EGRESS_ERR_CONTROL_PLANE: {
    exit: 1,
    meaning:
      "A `deployments` command could not reach the control plane, or it refused the request (the message has the answer's status, error code and, for a 422, each field path and problem type; never its text).",
    fix: "Check `--base-url` and `--api-key` (env `PLATFORM_CONTROL_PLANE_URL`, `PLATFORM_API_KEY`), and the fields the answer names.",
  },
  EGRESS_ERR_DEPLOY: {
    exit: 1,
    meaning: "`--wait` ended without DEPLOYED: the revision failed (its status is named) or time ran out.",
    fix: "Read the revision's status message (`deployments revisions`), fix the source or secrets, and update again.",
  },
} as const satisfies Record<`EGRESS_ERR_${string}`, ErrorEntry>;
