import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";

const helper = new URL("../src/serve-until-signal.ts", import.meta.url).href;
const logger = new URL("../src/log.ts", import.meta.url).href;

/**
 * Runs a service that says "serving" and then takes `startRestMs` more to finish starting (a service that logs it
 * listens before its start returns), whose stop takes `stopMs` (never, when null); sends it SIGTERM on "serving".
 */
async function serveAndTerminate(stopMs: number | null, startRestMs = 0): Promise<{ code: number | null; messages: string[] }> {
  const script = `
    import { serveUntilSignal } from ${JSON.stringify(helper)};
    import { createLogger } from ${JSON.stringify(logger)};
    const serving = setInterval(() => {}, 1000); // what a listening server does: keeps the process up
    const stop = () => new Promise((resolve) => {
      if (${stopMs} === null) return; // a stop that never ends
      setTimeout(() => { clearInterval(serving); resolve(); }, ${stopMs ?? 0});
    });
    const start = async () => {
      process.stdout.write(JSON.stringify({ msg: "serving" }) + "\\n");
      await new Promise((resolve) => setTimeout(resolve, ${startRestMs}));
      process.stdout.write(JSON.stringify({ msg: "started" }) + "\\n");
      return { close: stop };
    };
    await serveUntilSignal({ name: "demo service", logger: createLogger("info"), start, deadlineMs: 300 });
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    out += chunk;
    if (out.includes('"serving"') && !child.killed) child.kill("SIGTERM");
  });
  const [code] = await once(child, "exit");
  const messages = out
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line).msg as string);
  return { code, messages };
}

test("SIGTERM stops a service: it says it is stopping, stops, says so, and exits 0", async () => {
  const { code, messages } = await serveAndTerminate(50);
  assert.equal(code, 0);
  assert.deepEqual(messages, ["serving", "started", "demo service stopping", "demo service stopped"]);
});

test("a SIGTERM while the service is still starting stops it cleanly once started, exit 0 (not killed mid-start)", async () => {
  const { code, messages } = await serveAndTerminate(50, 300);
  assert.equal(code, 0);
  assert.deepEqual(messages, ["serving", "started", "demo service stopping", "demo service stopped"]);
});

test("a stop that hangs past the deadline exits 1 with a message instead of hanging", async () => {
  const { code, messages } = await serveAndTerminate(null);
  assert.equal(code, 1);
  assert.deepEqual(messages, ["serving", "started", "demo service stopping", "demo service: stop took over 0.3 s; exiting"]);
});
