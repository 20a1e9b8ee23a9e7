import { HttpError, InternalError } from "../errors.ts";
import { budgetKey, type HttpLimits } from "./limits.ts";

/**
 * What parsing one JSON object or array, or one protobuf message, costs in memory beyond its bytes (measured: an
 * empty JSON array parsed by V8 holds about 50 bytes): a body is charged this per item on top of its bytes.
 */
export const ITEM_COST = 64;

/**
 * The memory request bodies may hold at once: each body is charged its bytes as they arrive (decompressed, when
 * compressed), never what it declares it will send, and ITEM_COST per item once counted, and gives it all back when
 * its request is answered. A body that would take the total past `bytes` while other bodies hold some is refused
 * with 503 and Retry-After, unread beyond that point: a burst of large bodies is served a few at a time instead of
 * all at once. A lone body is never refused (the per-body limits bound it), so any body within those limits can get
 * through.
 */
export class BodyBudget {
  readonly bytes: number;
  readonly #key: string | undefined;
  #held = 0;

  constructor(bytes: number, key?: string) {
    this.bytes = bytes;
    this.#key = key;
  }

  /** Bytes held by bodies now (for /metrics and tests). */
  get held(): number {
    return this.#held;
  }

  /** One request's account: charge as its body grows, release once when it is answered. */
  open(): BodyCharge {
    let mine = 0;
    return {
      charge: (bytes: number) => {
        if (this.#held + bytes > this.bytes && this.#held > mine) {
          throw new HttpError(
            "EGRESS_ERR_BUSY",
            `too many request bodies are being read at once (over ${this.bytes} bytes${this.#key ? `, ${this.#key}` : ""}); send it again shortly`,
            { "retry-after": "1" },
          );
        }
        this.#held += bytes;
        mine += bytes;
      },
      release: () => {
        this.#held -= mine;
        mine = 0;
      },
    };
  }
}

export interface BodyCharge {
  /** Adds `bytes` to this request's share; throws a 503 HttpError when the budget cannot take them. */
  charge(bytes: number): void;
  release(): void;
}

/**
 * A server's body budgets: the shared one (`bodyBytesInFlight`, for routes without a class) and one per budget class
 * (`bodyBudgets`): bodies of one class can never take another's room, so telemetry or anonymous bodies filling
 * theirs never refuse billing.
 */
export class BodyBudgets {
  readonly #shared: BodyBudget;
  readonly #classes = new Map<string, BodyBudget>();

  constructor(limits: Pick<HttpLimits, "bodyBytesInFlight" | "bodyBudgets">, limitsKey?: string) {
    const key = (name: string) => (limitsKey ? `${limitsKey}.${name}` : undefined);
    this.#shared = new BodyBudget(limits.bodyBytesInFlight, key("bodyBytesInFlight"));
    for (const [name, bytes] of Object.entries(limits.bodyBudgets)) this.#classes.set(name, new BodyBudget(bytes, key(budgetKey(name))));
  }

  /** The budget of a class (undefined: the shared one); a class the limits do not have is a bug in the routes. */
  get(budgetClass: string | undefined): BodyBudget {
    if (budgetClass === undefined) return this.#shared;
    const budget = this.#classes.get(budgetClass);
    if (!budget) throw new InternalError(`budget class "${budgetClass}" is not one of this server's (http limits' bodyBudgets)`);
    return budget;
  }

  /** Bytes held now, by budget ("shared" and each class). */
  held(): Record<string, number> {
    return Object.fromEntries([["shared", this.#shared.held], ...[...this.#classes].map(([name, budget]) => [name, budget.held])]);
  }
}
