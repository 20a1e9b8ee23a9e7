import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import type * as z from "zod";
import { HttpError } from "../../errors.ts";
import { mediaType } from "../../http/body.ts";
import type { HttpRequest } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { parseRequest, RequestValidationError } from "../../http/validate.ts";
import { adminPaths, OFFLINE_IMPORT_MAX_BYTES, OfflineImportQuery, type OfflineImportResult } from "../../protocol/beacon-admin.ts";
import { ExportHeader } from "../../protocol/instance.ts";
import { TraceTransaction } from "../../protocol/trace-transaction.ts";
import { MAX_VALIDATION_ERRORS, type ValidationError } from "../../protocol/validation-error.ts";
import type { AdminDeps } from "./deps.ts";
import { type BodyLine, bodyLines, type LineLimits } from "./import-lines.ts";
import { ImportSpool } from "./import-spool.ts";

/** An export file: OFFLINE_IMPORT_MAX_BYTES; lines of at most 64 KiB (a record is under 1 KiB); 30 s of nothing. */
export const IMPORT_LIMITS: LineLimits = { maxBytes: OFFLINE_IMPORT_MAX_BYTES, maxLineBytes: 64 * 1024, idleMs: 30_000 };
/** Any label a JSON-lines file goes by, and none; what is inside is checked line by line whatever the label. */
const MEDIA_TYPES = [
  "application/x-ndjson",
  "application/jsonl",
  "application/x-jsonlines",
  "application/json",
  "text/plain",
  "application/octet-stream",
];
/** Records per insert statement. */
const INSERT_BATCH = 1000;

type Loc = ValidationError["loc"];
const atLine = (line: number, rest: Loc = []): Loc => ["body", "line", line, ...rest];

/** A line's value by `schema`, or its problems with `loc` under the line: `["body", "line", 17, "tenant_id"]`. */
function parseLine<S extends z.ZodType>(schema: S, value: unknown, line: number): { data: z.output<S> } | { issues: ValidationError[] } {
  try {
    return { data: parseRequest(schema, value, "body") };
  } catch (err) {
    if (!(err instanceof RequestValidationError)) throw err;
    return { issues: err.detail.map((d) => ({ ...d, loc: atLine(line, d.loc.slice(1)) })) };
  }
}

function jsonOf(line: BodyLine): { value: unknown } | { issue: ValidationError } {
  if (line.tooLong) {
    return {
      issue: {
        loc: atLine(line.number),
        msg: `longer than ${IMPORT_LIMITS.maxLineBytes} bytes: no line of an export is`,
        type: "line_too_long",
      },
    };
  }
  try {
    return { value: JSON.parse(line.text) };
  } catch {
    return { issue: { loc: atLine(line.number), msg: "not valid JSON: a damaged or cut-off line", type: "json_invalid" } };
  }
}

interface Whose {
  header: ExportHeader;
  licenseId: string;
}

/** The header (line 1) and the license the records are charged to: the header's, or `?license=` when it has none. */
async function whoseFile(line: BodyLine, query: { license?: string | undefined }, deps: AdminDeps): Promise<Whose | ValidationError[]> {
  const json = jsonOf(line);
  if ("issue" in json) return [{ ...json.issue, msg: `${json.issue.msg}; the first line must be the header export writes` }];
  const value = json.value;
  if (value === null || typeof value !== "object" || !Object.hasOwn(value, "egress_export")) {
    // A record, or anything else: one problem, not one per field of a header it never meant to be.
    return [{ loc: atLine(1, ["egress_export"]), msg: "the first line must be the header export writes", type: "missing" }];
  }
  const parsed = parseLine(ExportHeader, value, line.number);
  if ("issues" in parsed) return parsed.issues;
  const header = parsed.data;
  if (header.license_id !== null && query.license !== undefined && query.license !== header.license_id) {
    return [
      {
        loc: ["query", "license"],
        msg: `the file names license ${header.license_id} (line 1): leave --license out`,
        type: "license_mismatch",
      },
    ];
  }
  const licenseId = header.license_id ?? query.license;
  if (licenseId === undefined) {
    return [
      {
        loc: atLine(1, ["license_id"]),
        msg: "the file names no license: say whose it is with ?license=ID (beacon import --license ID)",
        type: "missing",
      },
    ];
  }
  if (!(await deps.store.licenses.get(licenseId))) {
    const loc = header.license_id === null ? ["query", "license"] : atLine(1, ["license_id"]);
    return [{ loc, msg: `no license ${licenseId} in this beacon (beacon licenses list)`, type: "license_unknown" }];
  }
  return { header, licenseId };
}

/**
 * Reads the whole file, checking every line, into `spool`; throws a 422 naming each bad line (the first
 * MAX_VALIDATION_ERRORS problems) once the file has been read to its end, so the client is answered whole.
 */
async function readFile(request: HttpRequest, deps: AdminDeps, spool: ImportSpool): Promise<Whose & { records: number }> {
  const query = parseRequest(OfflineImportQuery, { ...request.query }, "query");
  const issues: ValidationError[] = [];
  let whose: Whose | undefined;
  let records = 0;
  for await (const line of bodyLines(request.body as Readable, IMPORT_LIMITS)) {
    if (line.number === 1) {
      const found = await whoseFile(line, query, deps);
      if (Array.isArray(found)) issues.push(...found);
      else whose = found;
      continue;
    }
    // Past a bad header, or enough problems to act on, the rest is read (and dropped) only so the answer arrives.
    if (!whose || issues.length >= MAX_VALIDATION_ERRORS || line.text?.trim() === "") continue;
    const json = jsonOf(line);
    const parsed = "issue" in json ? { issues: [json.issue] } : parseLine(TraceTransaction, json.value, line.number);
    if ("issues" in parsed) issues.push(...parsed.issues);
    else if (issues.length === 0) {
      await spool.append(parsed.data);
      records++;
    }
  }
  if (!whose && issues.length === 0) {
    issues.push({ loc: atLine(1), msg: "the file is empty: its first line must be the header export writes", type: "missing" });
  }
  if (issues.length > 0) throw new RequestValidationError(issues.slice(0, MAX_VALIDATION_ERRORS));
  await spool.flush();
  return { ...whose!, records };
}

function checkUpload(headers: IncomingHttpHeaders): void {
  const type = mediaType(headers);
  if (type !== "" && !MEDIA_TYPES.includes(type)) {
    throw new HttpError(
      "EGRESS_ERR_MEDIA_TYPE",
      `Content-Type ${type} is not taken here; send the file as ${MEDIA_TYPES[0]} (or text/plain)`,
    );
  }
  const encoding = headers["content-encoding"]?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    throw new HttpError("EGRESS_ERR_CONTENT_ENCODING", `Content-Encoding ${encoding} is not taken here; send the file as export wrote it`);
  }
  if (Number(headers["content-length"]) > IMPORT_LIMITS.maxBytes) {
    throw new HttpError(
      "EGRESS_ERR_BODY_TOO_LARGE",
      `the file is larger than the ${IMPORT_LIMITS.maxBytes}-byte limit of an import; import it in parts, each with its header line (docs/beacon.md)`,
    );
  }
}

/**
 * `POST /v1/admin/offline-imports`: a file `egress-agent export` wrote, streamed in. Every line is checked before
 * anything is stored, then all its records are stored in one transaction, each (license, id) once: the same file
 * again, or records that also came online, are duplicates. A file with any bad line is refused whole (422 naming
 * the lines), and nothing of it is kept. The instance the header names is recorded as seen at `exported_at` (the
 * import's time if that is later), and the import is audited with its counts (never a record).
 */
export function registerImportRoutes(app: HttpServer, deps: AdminDeps): void {
  app.post(
    adminPaths.offlineImports,
    async (request): Promise<OfflineImportResult> => {
      checkUpload(request.headers);
      const spool = await ImportSpool.open(deps.config.dataDir);
      try {
        const { header, licenseId, records } = await readFile(request, deps, spool);
        const imported = await deps.store.importTransactions(licenseId, () => spool.batches(INSERT_BATCH), new Date(deps.now()));
        const duplicates = records - imported;
        if (header.instance_id !== null) {
          const sighting = { licenseId, instanceId: header.instance_id.toLowerCase(), version: header.egress_version, mode: header.mode };
          // The header is the customer's word: a date after the import would show the instance active for ever.
          const seenAt = new Date(Math.min(Date.parse(header.exported_at), deps.now()));
          await deps.store.instances.recordInstance({ ...sighting, seenAt });
        }
        const detail = {
          records,
          imported,
          duplicates,
          instanceId: header.instance_id,
          exportedAt: header.exported_at,
          since: header.since,
        };
        await deps.store.licenses.audit(
          { actor: deps.auth.actor(request), action: "offline-import", licenseId, detail },
          new Date(deps.now()),
        );
        request.log.info({ licenseId, ...detail }, "offline import");
        return { imported, duplicates };
      } finally {
        await spool.close();
      }
    },
    { authorize: deps.auth.authorize, body: "stream" },
  );
}
