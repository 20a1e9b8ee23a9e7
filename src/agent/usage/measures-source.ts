import { readFileSync } from "node:fs";
import { EgressError } from "../../errors.ts";
import { UsageMeasures } from "../../protocol/usage-snapshot.ts";
import type { Outbox } from "../outbox.ts";

/** Where a snapshot's counts come from. Throws MeasuresUnavailableError rather than ever inventing a zero. */
export interface MeasuresSource {
  readonly name: string;
  current(): Promise<UsageMeasures>;
}

/** The counts cannot be read now: the snapshot waits and is tried again; nothing is sent. */
export class MeasuresUnavailableError extends EgressError {
  constructor(message: string) {
    super("EGRESS_ERR_MEASURES_UNAVAILABLE", message);
  }
}

const PUSHED_KEY = "usage.pushedMeasures";

/** `push`: the instance posts its current counts to POST /v1/usage/measures; the latest are kept on disk. */
export class PushedMeasures implements MeasuresSource {
  readonly name = "push";
  readonly #outbox: Outbox;

  constructor(outbox: Outbox) {
    this.#outbox = outbox;
  }

  store(measures: UsageMeasures): void {
    this.#outbox.setValue(PUSHED_KEY, JSON.stringify(measures));
  }

  async current(): Promise<UsageMeasures> {
    const stored = this.#outbox.getValue(PUSHED_KEY);
    if (!stored) throw new MeasuresUnavailableError("no counts pushed yet to POST /v1/usage/measures");
    return UsageMeasures.parse(JSON.parse(stored));
  }
}

/** `file`: a JSON file of the counts, read at each snapshot (air-gapped tooling writes it). */
export class FileMeasures implements MeasuresSource {
  readonly name = "file";
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  async current(): Promise<UsageMeasures> {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.#path, "utf8"));
    } catch (err) {
      throw new MeasuresUnavailableError(`usage.file ${this.#path}: ${(err as Error).message}`);
    }
    const parsed = UsageMeasures.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new MeasuresUnavailableError(`usage.file ${this.#path}: ${issue.path.join(".") || "(top level)"}: ${issue.message}`);
    }
    return parsed.data;
  }
}
