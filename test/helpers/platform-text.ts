// Realistic free text of a platform instance's operational telemetry (warning and error log lines, span names and
// status messages, metric descriptions), for the privacy filter's utility figure and its micro-benchmark. What is
// between [[ and ]] is a parameter (a number, a name, an id, a customer's own identifier); every other word is a
// constant of the template and should survive the filter.

export const PLATFORM_TEXT: readonly string[] = [
  // Log lines: the agent server, its queue, Postgres, Redis, the model providers.
  "Background run failed: run [[1ef9c3a2-7b4d-4e2a-9c1e-0d2f4e6b7a10]] exceeded the timeout of [[300]] seconds",
  "Run [[1ef9c3a2-7b4d-4e2a-9c1e-0d2f4e6b7a10]] was cancelled by the client",
  "Worker stats: [[3]] active, [[7]] available, [[12]] queued",
  "Queue is backing up: [[42]] pending runs, oldest waiting [[95]] s",
  "Postgres connection pool exhausted, waiting for a free connection",
  "Postgres connection pool nearly exhausted: [[19]] of [[20]] connections in use",
  "could not connect to server: Connection refused",
  "connection to server at [[10.0.12.7]], port [[5432]] failed: timeout expired",
  "slow query on table [[customer_orders]] took [[2314]] ms",
  "checkpoint write took [[1280]] ms for thread [[8d3e1f2a-0000-4000-8000-123456789abc]]",
  "Redis connection lost, retrying in [[5]] seconds",
  "Redis is not reachable at [[redis-master.langgraph.svc]], falling back to polling",
  "Rate limit reached for model [[gpt-4o]], retrying after [[20]] seconds",
  "Request to model provider failed with status [[429]]: too many requests",
  "Request to model provider failed with status [[500]]: internal server error",
  "The model returned an invalid response, retrying ([[2]] of [[3]])",
  "Tool call [[search_orders]] raised an exception: KeyError",
  "Graph [[support_agent]] failed to compile: node [[route_ticket]] has no outgoing edges",
  "Assistant [[7c4f1e2b-1111-4e2a-9c1e-0d2f4e6b7a10]] not found",
  "Thread [[8d3e1f2a-0000-4000-8000-123456789abc]] is busy, rejecting new run",
  "Stream disconnected before the run finished",
  "Webhook delivery to [[https://hooks.acme-corp.example/langgraph]] failed with status [[502]]",
  "Cron [[4f2a9c1e]] skipped: previous run still in progress",
  "License check failed: could not reach the beacon, retrying in [[60]] seconds",
  "Memory usage is high: [[3.8]] GiB of [[4]] GiB",
  "Disk space is low on the data volume: [[512]] MiB free",
  "Store search timed out after [[10]] seconds",
  "Failed to serialize the state of thread [[8d3e1f2a-0000-4000-8000-123456789abc]]: value is not JSON serializable",
  "Unhandled exception in the background worker",
  "TypeError: Cannot read properties of undefined (reading '[[customerId]]')",
  "Error: ECONNRESET",
  "Error: getaddrinfo ENOTFOUND [[api.internal-llm.example]]",
  "request aborted by the client after [[30]] seconds",
  "The server is shutting down, waiting for [[4]] runs to finish",
  "Graceful shutdown timed out, [[2]] runs were interrupted",
  "Migration [[0042_add_index]] is taking longer than expected",
  "Heartbeat missed for worker [[worker-7f9c]], reassigning its runs",
  "Retrying the failed run, attempt [[2]] of [[5]]",
  "Authentication failed: the API key is invalid",
  "Permission denied for user [[Maria Garcia]]",
  "Login attempt from [[203.0.113.7]] rejected: invalid credentials",
  "Email to [[alice.smith@corp.example]] could not be delivered",
  "Invalid input for field [[order_reference]]: expected a string",
  "Payload too large: [[18]] MiB exceeds the limit of [[16]] MiB",
  "Deadlock detected, the transaction was rolled back and will be retried",
  "Out of memory while loading the graph, restarting the worker",
  "Upstream service unavailable, the circuit breaker is open",
  "Certificate verification failed for the proxy",
  "DNS lookup failed for the database host",
  "Received an unexpected message type from the client",
  // Span names and status messages.
  "POST /threads/[[8d3e1f2a-0000-4000-8000-123456789abc]]/runs",
  "GET /threads/[[8d3e1f2a-0000-4000-8000-123456789abc]]/state",
  "POST /runs/stream",
  "GET /assistants/[[support_agent]]",
  "POST /store/items/search",
  "checkpoint write",
  "graph invoke",
  "model call",
  "tool call",
  "database query",
  "upstream failed",
  "HTTP [[503]]",
  "deadline exceeded",
  "connection reset by peer",
  "no response",
  "the run was interrupted",
  // Metric descriptions and names.
  "request latency",
  "counter of failed requests",
  "number of runs waiting in the queue",
  "time a run spent waiting before it started",
  "number of open database connections",
  "duration of checkpoint writes",
  "size of the state written per step",
  "number of model calls that were retried",
  "platform_http_requests_latency",
  "platform_http_requests_failed",
];

/**
 * Written after the vocabulary was settled and never used to tune it: the figure on these says what the filter keeps of
 * text nobody fitted it to.
 */
export const HELD_OUT_TEXT: readonly string[] = [
  "Failed to acquire advisory lock for run [[1ef9c3a2-7b4d-4e2a-9c1e-0d2f4e6b7a10]] after [[3]] attempts",
  "Sweeping [[14]] stale runs left by a crashed worker",
  "Checkpoint blob for thread [[8d3e1f2a-0000-4000-8000-123456789abc]] is larger than [[10]] MB, consider pruning",
  "Could not parse the configuration file: unexpected token at line [[12]]",
  "The graph recursion limit of [[25]] was reached without hitting a stop condition",
  "Input validation failed: field [[messages]] is required",
  "Streaming response was closed by the client before completion",
  "Rejected request with an expired license",
  "Too many concurrent runs for assistant [[support_agent]], queueing",
  "HTTP request to [[https://api.openai.com/v1/chat/completions]] timed out",
  "SSL handshake failed with the database server",
  "Connection pool for the checkpointer was recreated",
  "Background task raised an error and will be restarted",
  "Received SIGTERM, draining the queue",
  "Vector index update failed for namespace [[customer_docs]]",
  "Slow run: [[45]] seconds spent in node [[summarize]]",
  "User [[Priya Raman]] exceeded the rate limit",
  "Unable to load the graph module [[agent.graph]]: ModuleNotFoundError",
  "Cancelled [[2]] runs because the thread was deleted",
  "Webhook returned a redirect, which is not followed",
  "duration of model calls by provider",
  "number of runs that failed",
  "bytes written to the checkpoint store",
  "GET /threads/[[8d3e1f2a-0000-4000-8000-123456789abc]]/history",
  "POST /assistants/search",
];

/** The text as the instance sends it: the parameter marks removed. */
export const asSent = (entry: string): string => entry.replaceAll("[[", "").replaceAll("]]", "");

/** The constant words of an entry: the words outside its parameters (letters only, 2 or more). */
export function constantWords(entry: string): string[] {
  return entry
    .replace(/\[\[.*?\]\]/g, " ")
    .split(/[^A-Za-z_]+/)
    .filter((word) => word.length >= 2);
}
