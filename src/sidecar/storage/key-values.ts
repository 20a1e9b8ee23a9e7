import type Database from "better-sqlite3";

/**
 * Small values the sidecar keeps beside its queue, in the outbox file so that they commit with it: the license
 * cache, the usage window, the outbox's id, delivered counts. Statements prepared once.
 */
export class KeyValues {
  readonly #get: Database.Statement;
  readonly #set: Database.Statement;
  readonly #add: Database.Statement;

  constructor(db: Database.Database) {
    this.#get = db.prepare("SELECT value FROM kv WHERE key = ?");
    this.#set = db.prepare("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    this.#add = db.prepare(
      "INSERT INTO kv (key, value) VALUES (@key, @n) ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + @n",
    );
  }

  get(key: string): string | undefined {
    return (this.#get.get(key) as { value: string } | undefined)?.value;
  }

  set(key: string, value: string): void {
    this.#set.run(key, value);
  }

  /** Adds `n` to a counter (absent counts as 0). */
  add(key: string, n: number): void {
    this.#add.run({ key, n });
  }
}
