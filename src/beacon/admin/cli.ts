import { readFileSync } from "node:fs";
import { Command } from "commander";
import { table } from "../../cli-table.ts";
import { ConfigError } from "../../errors.ts";
import type { LicenseSummary, LicenseView } from "../../protocol/beacon-admin.ts";
import type { BeaconAdminClient } from "./client.ts";

// `egress-agent beacon licenses ...`: the admin API's client for a vendor's staff and scripts.

export const DEFAULT_ADMIN_URL = "http://127.0.0.1:8081";

interface Flags {
  url?: string;
  apiKeyFile?: string;
  json?: boolean;
  id?: string;
  org?: string;
  expiresAt?: string;
  seats?: string;
  offlineAllowed?: boolean;
}

const out = (text: string): void => void process.stdout.write(`${text}\n`);

/** The admin key: from --api-key-file, else env BEACON_ADMIN_API_KEY (never a flag: it would show in `ps`). */
function adminKey(flags: Flags): string {
  if (flags.apiKeyFile !== undefined) {
    let key: string;
    try {
      key = readFileSync(flags.apiKeyFile, "utf8").trim();
    } catch (err) {
      throw new ConfigError("--api-key-file", [`--api-key-file: cannot read ${flags.apiKeyFile} (${(err as NodeJS.ErrnoException).code})`]);
    }
    if (!key) throw new ConfigError("--api-key-file", [`--api-key-file: ${flags.apiKeyFile} is empty`]);
    return key;
  }
  const key = process.env.BEACON_ADMIN_API_KEY;
  if (!key) throw new ConfigError("--api-key-file", ["--api-key-file: give the admin key in a file, or set env BEACON_ADMIN_API_KEY"]);
  return key;
}

function seats(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new ConfigError("--seats", ["--seats: must be a whole number"]);
  return Number(value);
}

const dash = (value: string | null) => value ?? "-";
const row = (l: LicenseSummary) => [
  l.id,
  l.organizationId,
  l.expiresAt,
  String(l.seats),
  l.state,
  dash(l.lastVerifiedAt),
  String(l.instances),
];
const HEADER = ["ID", "ORGANIZATION", "EXPIRES", "SEATS", "STATE", "LAST VERIFIED", "INSTANCES"];
const summary = (l: LicenseView) =>
  `license ${l.id}: ${l.state}, ${l.seats} seats, expires ${l.expiresAt}${l.revokedAt ? `, revoked ${l.revokedAt}` : ""}`;
const KEY_NOTE = "the key is shown this once (the beacon keeps only its hash): give it to the customer now";

async function run(name: string, id: string | undefined, flags: Flags): Promise<void> {
  const { BeaconAdminClient } = await import("./client.ts");
  const api: BeaconAdminClient = new BeaconAdminClient({ url: flags.url ?? DEFAULT_ADMIN_URL, apiKey: adminKey(flags) });
  const print = (value: unknown, text: string) => out(flags.json ? JSON.stringify(value, null, 2) : text);
  switch (name) {
    case "create": {
      const created = await api.create({
        id: flags.id!,
        organizationId: flags.org!,
        expiresAt: flags.expiresAt!,
        seats: seats(flags.seats)!,
        offlineAllowed: flags.offlineAllowed ?? false,
      });
      if (!flags.json) process.stderr.write(`${KEY_NOTE}\n`);
      return print(created, `${summary(created)}\nkey: ${created.key}`);
    }
    case "list": {
      const { licenses } = await api.list();
      return print({ licenses }, licenses.length === 0 ? "no licenses" : table([HEADER, ...licenses.map(row)]));
    }
    case "show": {
      const license = await api.show(id!);
      const usage = license.usage.map((u) => [u.month, String(u.transactions), String(u.traces)]);
      const lines = [
        table([HEADER, row({ ...license, instances: license.instances.length })]),
        `offline allowed: ${license.offlineAllowed ? "yes" : "no"}; created ${license.createdAt}; updated ${license.updatedAt}`,
        usage.length === 0 ? "no usage reported" : table([["MONTH", "TRANSACTIONS", "TRACES"], ...usage]),
      ];
      return print(license, lines.join("\n"));
    }
    case "update": {
      if (flags.expiresAt === undefined && flags.seats === undefined)
        throw new ConfigError("--expires-at", ["--expires-at or --seats: say what to change"]);
      const updated = await api.update(id!, { expiresAt: flags.expiresAt, seats: seats(flags.seats) });
      return print(updated, summary(updated));
    }
    case "revoke": {
      const revoked = await api.revoke(id!);
      return print(revoked, summary(revoked));
    }
    case "rotate-key": {
      const rotated = await api.rotateKey(id!);
      if (!flags.json) process.stderr.write(`${KEY_NOTE}; the old key is refused from now on\n`);
      return print(rotated, `key: ${rotated.key}`);
    }
  }
}

const action =
  (name: string) =>
  async (...args: unknown[]) => {
    const command = args.at(-1) as Command;
    await run(name, command.args[0], command.opts<Flags>());
  };

export function licensesCommand(): Command {
  const licenses = new Command("licenses").description("the beacon's licenses, through its admin listener (admin.listen)");
  const client = (command: Command) =>
    command
      .option("--url <url>", `the beacon's admin listener (default ${DEFAULT_ADMIN_URL})`)
      .option("--api-key-file <file>", "a file holding the admin key (default: env BEACON_ADMIN_API_KEY)")
      .option("--json", "print JSON");
  client(licenses.command("create").description("create a license; prints its key, this once"))
    .requiredOption("--id <id>", "license id (letters, digits, '.', '_', '-')")
    .requiredOption("--org <uuid>", "the customer's organization id")
    .requiredOption("--expires-at <timestamp>", "expiry, RFC 3339 with an offset (2027-12-31T00:00:00Z)")
    .requiredOption("--seats <n>", "seats")
    .option("--offline-allowed", "may be issued an offline license")
    .action(action("create"));
  client(licenses.command("list").description("every license, its state and when it last verified")).action(action("list"));
  client(licenses.command("show").description("one license, its instances and its usage by month").argument("<id>")).action(action("show"));
  client(licenses.command("update").description("renew: a new expiry and/or seat count").argument("<id>"))
    .option("--expires-at <timestamp>", "new expiry, RFC 3339 with an offset")
    .option("--seats <n>", "new seat count")
    .action(action("update"));
  client(licenses.command("revoke").description("revoke: its key and its tokens are refused from now on").argument("<id>")).action(
    action("revoke"),
  );
  client(licenses.command("rotate-key").description("replace its key; prints the new one, this once").argument("<id>")).action(
    action("rotate-key"),
  );
  return licenses;
}
