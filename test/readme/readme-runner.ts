import { spawn, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { processesWith, tempDir } from "../helpers/processes.ts";
import { filled, forms, type ShellBlock, withoutComment } from "./readme-shell.ts";

// Runs a scenario of documented commands (README.md, docs/) as a reader would: one bash session (so an `export`
// carries on), from the root of a checkout, with `egress-agent` on PATH as `npm link` puts it (a link to the
// checkout's bin/) and the machine's own node first on PATH. As root, in a network namespace of its own, whose
// loopback has the documented default ports free whatever else runs on this machine.

const ROOT = new URL("../..", import.meta.url).pathname;

/** What one step printed and how it exited (a background step: 0 once its port listens). */
export interface Run {
  rc: number;
  out: string;
  err: string;
}

export type Step =
  /** A README command: `cmd` is its index among the block's command lines; `form` of a synopsis with `[...]` parts. */
  | {
      cmd: number;
      form?: "min" | "full";
      values?: Record<string, string>;
      /** A serving command: started in the background, done once this port listens. */
      serves?: number;
      check: (run: Run) => void;
    }
  /** The test's own preparation between README commands (never counted as README coverage). */
  | { own: string; serves?: number; check?: (run: Run) => void }
  /** A README command this test does not run, and why. */
  | { cmd: number; skip: string };

export interface Ran {
  /** The shell text each step ran (README steps after filling placeholders), or its skip reason. */
  steps: { step: Step; shell?: string; run?: Run }[];
}

/**
 * A checkout to run the README in: the repository's files the commands use, node_modules hard-linked (same
 * filesystem: it lies inside the repository), .tools as it is. Inside the repository so its node_modules is real.
 */
export function makeCheckout(): { dir: string; binDir: string; remove: () => void } {
  const dir = mkdtempSync(join(ROOT, ".readme-run-"));
  // Others may traverse it: as root, the control plane runs deployments as users of their own, who read the install.
  chmodSync(dir, 0o755);
  for (const entry of ["package.json", "package-lock.json", "Makefile", "bin", "src", "scripts", "config", "examples", ".tools"]) {
    if (existsSync(join(ROOT, entry)))
      cpSync(join(ROOT, entry), join(dir, entry), { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  }
  const linked = spawnSync("cp", ["-al", join(ROOT, "node_modules"), join(dir, "node_modules")], { encoding: "utf8" });
  if (linked.status !== 0) throw new Error(`hard-linking node_modules: ${linked.stderr}`);
  // `npm link`: <prefix>/lib/node_modules/egress-agent -> the checkout, <prefix>/bin/egress-agent -> its bin/egress-agent.js.
  const prefix = tempDir("readme-npm-prefix-");
  mkdirSync(join(prefix, "lib/node_modules"), { recursive: true });
  mkdirSync(join(prefix, "bin"));
  symlinkSync(dir, join(prefix, "lib/node_modules/egress-agent"));
  symlinkSync("../lib/node_modules/egress-agent/bin/egress-agent.js", join(prefix, "bin/egress-agent"));
  return {
    dir,
    binDir: join(prefix, "bin"),
    remove: () => {
      for (const pid of processesWith(dir)) process.kill(pid, "SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const SHELL_PRELUDE = `
# Job control: each background command is a process group of its own, stopped whole (npx, the entry point, Node).
set -m
wait_port() { # the port listens within 30 s
  for _ in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1
}
port_busy() { (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null; }
stop_step() { # stop step $1's group; its port $2 is free again within 15 s
  kill -TERM -- "-$(cat "$OUT/$1.pid")" 2>/dev/null; wait "$(cat "$OUT/$1.pid")" 2>/dev/null
  for _ in $(seq 1 150); do port_busy $2 || return 0; sleep 0.1; done; return 1
}
`;

/** The bash text of one step: its output and exit code go to files named by its index. */
function stepShell(index: number, shell: string, serves: number | undefined): string {
  const files = `>"$OUT/${index}.out" 2>"$OUT/${index}.err" </dev/null`;
  if (serves === undefined) return `{ ${shell}\n} ${files}; echo $? >"$OUT/${index}.rc"`;
  const background = shell.endsWith("&") ? shell : `${shell} &`;
  return [
    `if port_busy ${serves}; then echo "port ${serves} is taken" >"$OUT/${index}.err"; echo 98 >"$OUT/${index}.rc"; else`,
    `{ ${background}\n} ${files}; echo $! >"$OUT/${index}.pid"; wait_port ${serves}; echo $? >"$OUT/${index}.rc"; fi`,
  ].join("\n");
}

/** README steps' text: the block's command line, comment dropped, in the asked form, placeholders filled. */
function readmeShell(block: ShellBlock, step: { cmd: number; form?: "min" | "full"; values?: Record<string, string> }): string {
  const line = block.lines[step.cmd];
  if (!line) throw new Error(`block at ${block.file}:${block.fence} has no command ${step.cmd}`);
  const variants = forms(withoutComment(line.text));
  const text = step.form === "full" ? variants.at(-1)! : variants[0]!;
  return filled(text, step.values ?? {});
}

/** Runs the steps in one bash session from the checkout's root; `timeoutMs` bounds the whole scenario. */
export async function runScenario(
  block: ShellBlock,
  steps: Step[],
  checkout: { dir: string; binDir: string },
  /** Node 24 first on PATH (as after `source scripts/node-env.sh`), else the machine's node. */
  options: { projectNodeFirst?: boolean | undefined; timeoutMs?: number } = {},
): Promise<Ran> {
  const out = tempDir("readme-out-");
  const planned = steps.map((step) => ({ step, shell: "skip" in step ? undefined : "own" in step ? step.own : readmeShell(block, step) }));
  const script = [
    'cd "$CHECKOUT" || exit 99',
    SHELL_PRELUDE,
    ...planned.map(({ step, shell }, i) =>
      shell === undefined ? `# step ${i}: skipped` : stepShell(i, shell, "skip" in step ? undefined : step.serves),
    ),
    // Whatever still serves stops with the scenario.
    "for job in $(jobs -p); do kill -TERM -- -$job 2>/dev/null; done; wait",
  ].join("\n");
  const scriptPath = join(out, "scenario.sh");
  writeFileSync(scriptPath, script);
  const nodeFirst = options.projectNodeFirst ? dirname(process.execPath) : "/usr/bin:/bin";
  await runBash(scriptPath, { CHECKOUT: checkout.dir, OUT: out }, `${checkout.binDir}:${nodeFirst}`, options.timeoutMs ?? 120_000);
  return {
    steps: planned.map(({ step, shell }, i) => {
      if (shell === undefined) return { step };
      const read = (ext: string) => (existsSync(join(out, `${i}.${ext}`)) ? readFileSync(join(out, `${i}.${ext}`), "utf8") : "");
      return { step, shell, run: { rc: Number(read("rc").trim() || "-1"), out: read("out"), err: read("err") } };
    }),
  };
}

/** Whether scenarios get a network namespace of their own (root, with unshare and ip): else they share this one's. */
export const privateNetworks = process.getuid?.() === 0 && spawnSync("unshare", ["-n", "ip", "link", "set", "lo", "up"]).status === 0;

/** The command prefix that runs a scenario in a network namespace of its own, whose loopback is up. */
function privateNetwork(): string[] {
  return privateNetworks ? ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"] : [];
}

async function runBash(scriptPath: string, vars: Record<string, string>, pathFirst: string, timeoutMs: number): Promise<void> {
  // A reader's environment: none of this machine's settings for the product, the machine's node first on PATH.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^(EGRESS_|BEACON_|PLATFORM_|PHONE_HOME_|NODE_TEST|NODE_OPTIONS|HTTPS?_PROXY|NO_PROXY)/i.test(name),
    ),
  );
  const [command, ...args] = [...privateNetwork(), "bash", scriptPath];
  const child = spawn(command!, args, {
    env: { ...env, ...vars, PATH: `${pathFirst}:${process.env.PATH}` },
    stdio: "ignore",
    detached: true,
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      process.kill(-child.pid!, "SIGKILL");
      reject(new Error(`the scenario ran over ${timeoutMs / 1000} s (outputs in ${vars.OUT})`));
    }, timeoutMs);
    child.on("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
