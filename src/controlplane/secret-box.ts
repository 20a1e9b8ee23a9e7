import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EgressError } from "../errors.ts";

const KEY_FILE = "secrets.key";

/**
 * Seals secret values (deployment secrets, provider tokens) before they reach SQLite: AES-256-GCM under a key
 * generated into the data dir (owner-only) on first use. A copy of the database alone reveals no secret.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(dataDir: string) {
    const path = join(dataDir, KEY_FILE);
    if (!existsSync(path)) writeFileSync(path, randomBytes(32).toString("base64"), { mode: 0o600, flag: "wx" });
    this.#key = Buffer.from(readFileSync(path, "utf8").trim(), "base64");
    if (this.#key.length !== 32) {
      throw new EgressError(
        "EGRESS_ERR_SECRET_KEY",
        `${path} is not a 32-byte base64 key: restore it from the backup of controlplane.db (the secrets sealed in it need this key)`,
      );
    }
  }

  /** "v1.<iv>.<tag>.<ciphertext>", base64url parts. */
  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return ["v1", iv, cipher.getAuthTag(), body].map((part) => (typeof part === "string" ? part : part.toString("base64url"))).join(".");
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split(".");
    if (version !== "v1" || !iv || !tag || body === undefined) {
      throw new EgressError("EGRESS_ERR_SECRET_KEY", "a secret stored in controlplane.db is not a sealed value: the database is damaged");
    }
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
    } catch {
      // GCM's tag check: the key is not the one it was sealed with, or the value was changed.
      throw new EgressError(
        "EGRESS_ERR_SECRET_KEY",
        "a secret stored in controlplane.db does not open with secrets.key: the key was replaced, or the database restored without its key",
      );
    }
  }

  /** A secret of its own for `label` (HMAC under the key): the same across restarts, stored nowhere. */
  derive(label: string): string {
    return createHmac("sha256", this.#key).update(label).digest("base64url");
  }
}
