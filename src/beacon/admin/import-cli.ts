import { closeSync, createReadStream, openSync, readSync, statSync } from "node:fs";
import { type IncomingMessage, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { Command } from "commander";
import { ConfigError } from "../../errors.ts";
import { adminPaths, OFFLINE_IMPORT_MAX_BYTES, OfflineImportResult } from "../../protocol/beacon-admin.ts";
import { LicenseId } from "../../protocol/license.ts";
import { HTTPValidationError } from "../../protocol/validation-error.ts";
import { describeRemoteError, parseAnswerText } from "../../remote-answer.ts";
import { BeaconAdminClient, BeaconAdminError } from "./client.ts";
import { adminApiKey, DEFAULT_ADMIN_URL } from "./instances-client.ts";

// `egress-agent beacon import FILE`: an offline true-up, a file `egress-agent export` wrote, into the beacon.

interface Flags {
  url: string;
  apiKeyFile?: string;
  license?: string;
  json?: boolean;
}

/** The answer read at most (a 422 lists up to 100 problems). */
const ANSWER_CAP = 1 << 20;
/** The longest the beacon may say nothing, the file sent: it checks and stores a large file for tens of seconds. */
const ANSWER_TIMEOUT_MS = 10 * 60_000;
/** Problems printed from a 422. */
const SHOWN = 10;
const LOC_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const TYPE = /^[A-Za-z0-9_.]{1,64}$/;

/** The license the file's first line names, if it can be read: for the check before sending, and the summary. */
function licenseOfHeader(file: string): string | undefined {
  const fd = openSync(file, "r");
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    const first = buffer.toString("utf8", 0, read).split("\n", 1)[0]!;
    const id = (JSON.parse(first) as { license_id?: unknown }).license_id;
    return LicenseId.safeParse(id).success ? (id as string) : undefined;
  } catch {
    return undefined; // the beacon names what is wrong with it
  } finally {
    closeSync(fd);
  }
}

/**
 * A 422's problems as `line 17, tenant_id: invalid_format`: field paths and types only, never the answer's free text
 * (a wrong --url may echo what it was sent).
 */
export function describeRefusal(body: unknown): string {
  const parsed = HTTPValidationError.safeParse(body);
  if (!parsed.success) return "422";
  const lines = parsed.data.detail.slice(0, SHOWN).map(({ loc, type }) => {
    const [source, kind, line, ...path] = loc;
    const safePath = path.every((p) => typeof p === "number" || LOC_NAME.test(p)) ? path.join(".") : "?";
    const safeType = TYPE.test(type) ? type : "?";
    if (source === "body" && kind === "line" && typeof line === "number")
      return `line ${line}${safePath ? `, ${safePath}` : ""}: ${safeType}`;
    if (source === "query" && kind === "license") return `--license: ${safeType}`;
    return `${loc.every((p) => typeof p === "number" || LOC_NAME.test(p)) ? loc.join(".") : "?"}: ${safeType}`;
  });
  const more = parsed.data.detail.length > SHOWN ? `\n  (and ${parsed.data.detail.length - SHOWN} more)` : "";
  return `the file was refused whole, nothing of it kept:\n  ${lines.join("\n  ")}${more}`;
}

/** Streams the file as the body (never all of it in memory); resolves with the answer, read up to ANSWER_CAP. */
function upload(url: URL, file: string, size: number, apiKey: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const headers = { "x-api-key": apiKey, "content-type": "application/x-ndjson", "content-length": String(size) };
    const request = send(url, { method: "POST", headers, timeout: ANSWER_TIMEOUT_MS });
    let answered = false;
    request.on("response", (response: IncomingMessage) => {
      answered = true;
      const chunks: Buffer[] = [];
      let bytes = 0;
      response.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= ANSWER_CAP) chunks.push(chunk);
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      response.on("error", () => reject(new BeaconAdminError(`${url.origin}: the answer was cut off`)));
    });
    request.on("timeout", () => request.destroy(new Error(`no answer within ${ANSWER_TIMEOUT_MS / 1000} s`)));
    request.on("error", (err: NodeJS.ErrnoException) => {
      if (answered) return;
      reject(
        new BeaconAdminError(
          `sending ${file} to the beacon's admin listener at ${url.origin} failed (${err.code ?? err.message}); check --url and admin.listen`,
        ),
      );
    });
    const body = createReadStream(file);
    body.on("error", (err: NodeJS.ErrnoException) => request.destroy(err));
    body.pipe(request);
  });
}

async function importFile(file: string, flags: Flags): Promise<void> {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (err) {
    throw new ConfigError("FILE", [`FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code})`]);
  }
  if (size > OFFLINE_IMPORT_MAX_BYTES) {
    throw new ConfigError("FILE", [
      `FILE: ${file} is over the ${OFFLINE_IMPORT_MAX_BYTES}-byte limit of one import: import it in parts, each with its header line first (docs/beacon.md, Offline true-ups)`,
    ]);
  }
  if (flags.license !== undefined && !LicenseId.safeParse(flags.license).success) {
    throw new ConfigError("--license", ["--license: must be a license id (letters, digits, '.', '_', '-')"]);
  }
  const apiKey = adminApiKey(flags);
  const license = flags.license ?? licenseOfHeader(file);
  // The key (401) and the license (404) checked before a large file is sent: a refusal then comes at once.
  const admin = new BeaconAdminClient({ url: flags.url, apiKey });
  if (license !== undefined) await admin.show(license);
  else await admin.audit();
  const url = new URL(`${flags.url.replace(/\/+$/, "")}${adminPaths.offlineImports}`);
  if (flags.license !== undefined) url.searchParams.set("license", flags.license);
  const answer = await upload(url, file, size, apiKey);
  const body = parseAnswerText(answer.text);
  if (answer.status === 422) throw new BeaconAdminError(describeRefusal(body), 422);
  const result = answer.status === 200 ? OfflineImportResult.safeParse(body) : undefined;
  if (!result?.success) {
    throw new BeaconAdminError(
      `POST ${adminPaths.offlineImports} answered ${describeRemoteError({ status: answer.status, body })}`,
      answer.status,
    );
  }
  const { imported, duplicates } = result.data;
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(result.data)}\n`
      : `imported ${imported} records, ${duplicates} duplicates (already in the beacon)${license ? ` for license ${license}` : ""}\n`,
  );
}

/** `egress-agent beacon import FILE`. */
export function importCommand(): Command {
  return new Command("import")
    .description("import a file `egress-agent export` wrote (an offline true-up): each record counted once, a damaged file refused whole")
    .argument("<file>", "the export file (JSON lines)")
    .option("--license <id>", "whose records they are, when the file's first line names no license")
    .option("--url <url>", "the beacon's admin listener (admin.listen)", DEFAULT_ADMIN_URL)
    .option("--api-key-file <file>", "a file holding the admin key (default: env BEACON_ADMIN_API_KEY)")
    .option("--json", "print the answer as JSON: {imported, duplicates}")
    .action((file: string, flags: Flags) => importFile(file, flags));
}
