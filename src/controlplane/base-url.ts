/**
 * Where `deployments` looks for the control plane when neither --base-url nor PLATFORM_CONTROL_PLANE_URL says: its
 * own module, so the CLI's option text does not load the client.
 */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8000";
