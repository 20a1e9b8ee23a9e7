// `helm template` for the tests: test/packaging/helm-render/main.go (Go's text/template with sprig, as Helm renders),
// built once per version of its source with Debian's Go and sprig (.ci/run installs them), and values.schema.json
// checked as Helm checks it, per chart, on the final values.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ajv } from "ajv";
import { parseAllDocuments } from "yaml";

const SOURCE = new URL("helm-render/main.go", import.meta.url).pathname;
export const CHART = new URL("../../helm/egress-agent", import.meta.url).pathname;

let built: string | undefined;

/** The renderer's binary, built at the first call (Debian: golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev). */
export function renderer(): string {
  if (built) return built;
  const source = readFileSync(SOURCE);
  const dir = join(tmpdir(), `egress-helm-render-${createHash("sha256").update(source).digest("hex").slice(0, 16)}`);
  const binary = join(dir, "helm-render");
  if (!existsSync(binary)) {
    const gopath = join(dir, `gopath-${process.pid}`);
    mkdirSync(join(gopath, "src/helmrender"), { recursive: true });
    copyFileSync(SOURCE, join(gopath, "src/helmrender/main.go"));
    // Built beside and renamed into place: test files running at once never run a half-written binary.
    const partial = `${binary}.${process.pid}`;
    const result = spawnSync("go", ["build", "-o", partial, "."], {
      cwd: join(gopath, "src/helmrender"),
      env: {
        ...process.env,
        GO111MODULE: "off",
        GOPATH: `${gopath}:/usr/share/gocode`,
        GOFLAGS: "",
        GOCACHE: process.env.GOCACHE ?? join(tmpdir(), "egress-go-build-cache"),
      },
      encoding: "utf8",
    });
    if (result.status !== 0) {
      throw new Error(
        `building the Helm renderer failed (apt-get install golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev): ${result.error ?? result.stderr}`,
      );
    }
    renameSync(partial, binary);
  }
  built = binary;
  return binary;
}

export type Values = Record<string, unknown>;
export type Manifest = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string } & Values };

export interface Rendered {
  /** Every document rendered, with the template it came from. */
  documents: { source: string; doc: Manifest }[];
  /** The raw text by template. */
  texts: Record<string, string>;
  /** NOTES.txt as `helm install` prints it. */
  notes: string;
  /** Each chart's final values, by chart path ("egress-agent", "platform/charts/egress-agent"). */
  values: Record<string, Values>;
}

/**
 * `helm template RELEASE CHART -f values.json`; throws Helm's error (a `fail`, a schema error) when it would.
 * `skipSchema`: as `--skip-schema-validation`, to see what the sidecar itself says of a value the schema refuses.
 */
export function helmTemplate(values: Values, options: { chart?: string; release?: string; skipSchema?: boolean } = {}): Rendered {
  const dir = mkdtempSync(join(tmpdir(), "egress-helm-values-"));
  try {
    const file = join(dir, "values.json");
    writeFileSync(file, JSON.stringify(values));
    const chart = options.chart ?? CHART;
    const result = spawnSync(renderer(), [chart, options.release ?? "test", "default", file], { encoding: "utf8" });
    if (result.status !== 0) throw new Error(result.stderr.trim());
    const out = JSON.parse(result.stdout) as {
      manifests: { source: string; content: string }[] | null;
      notes: string;
      values: Record<string, Values>;
    };
    if (!options.skipSchema) checkSchemas(chart, out.values);
    const documents: Rendered["documents"] = [];
    const texts: Record<string, string> = {};
    for (const { source, content } of out.manifests ?? []) {
      texts[source] = content;
      for (const doc of parseAllDocuments(content)) {
        if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors[0]!.message}\n${content}`);
        const value = doc.toJS() as Manifest | null;
        if (value) documents.push({ source, doc: value });
      }
    }
    return { documents, texts, notes: out.notes, values: out.values };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Helm validates each chart's final values against its values.schema.json (a dependency's under the parent's key). */
function checkSchemas(chart: string, values: Record<string, Values>): void {
  for (const [path, chartValues] of Object.entries(values)) {
    const dir = join(chart, ...path.split("/").slice(1));
    const schemaFile = join(dir, "values.schema.json");
    if (!existsSync(schemaFile)) continue;
    const validate = new Ajv({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(schemaFile, "utf8")));
    if (!validate(chartValues)) {
      const problems = validate.errors!.map((e) => `- ${path}${e.instancePath}: ${e.message} ${JSON.stringify(e.params)}`);
      throw new Error(`values don't meet the specifications of the schema(s):\n${problems.join("\n")}`);
    }
  }
}

/** The one document of `kind` (and name, when given). */
export function find(rendered: Rendered, kind: string, name?: string): Manifest {
  const found = rendered.documents.filter(({ doc }) => doc.kind === kind && (name === undefined || doc.metadata.name === name));
  if (found.length !== 1) throw new Error(`${found.length} ${kind} documents rendered (${name ?? "any name"})`);
  return found[0]!.doc;
}
