/** One entry of the error catalogue (src/error-codes.ts). */
export type ExitCode = 1 | 2 | 3;

/** Where the code reaches a user: answered over HTTP (some also end a command), ending a command, or only logged. */
export type Surface = { readonly status: number; readonly exit?: ExitCode } | { readonly exit: ExitCode } | { readonly logOnly: true };

export type ErrorEntry = Surface & {
  /** What happened, whatever the message says in particular. */
  readonly meaning: string;
  /** What the user should do. */
  readonly fix: string;
};
