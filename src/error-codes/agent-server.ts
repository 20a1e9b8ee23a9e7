import type { ErrorEntry } from "./entry.ts";

/** The agent server and `a2a send`: see src/error-codes.ts. */
export const AGENT_SERVER_ERRORS = {
  EGRESS_ERR_ASSISTANT_NOT_FOUND: {
    status: 404,
    meaning: "No assistant of `graph.json` has this id.",
    fix: "Use one of the assistant ids the message lists.",
  },
  EGRESS_ERR_A2A: {
    exit: 1,
    meaning:
      "`a2a send` failed to talk A2A with the agent server (unreachable, an answer that is not A2A, a JSON-RPC error, a stream cut short).",
    fix: "Check the URL and `--assistant`; the message has the server's answer.",
  },
  EGRESS_ERR_A2A_TASK: {
    exit: 1,
    meaning: "The task ended in a state other than completed (failed, canceled, rejected, input-required, ...).",
    fix: "Read the task's status message; answer an input-required task with `--context` and `--task`.",
  },
} as const satisfies Record<`EGRESS_ERR_${string}`, ErrorEntry>;
