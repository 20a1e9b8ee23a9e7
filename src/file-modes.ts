// Who may read what the services write: their data dirs hold billing records, tokens, keys and secrets.

/**
 * A process with a random UID in group 0, as OpenShift runs images: the next start (a rescheduled pod) may get another
 * UID of that group, so the data dir's files are shared with group 0 (umask 007, and `shareWithGroup`) instead of
 * owner-only. Anywhere else they stay owner-only: they hold billing records and the license token cache.
 */
export const groupShared = (): boolean => process.getuid?.() !== 0 && process.getgid?.() === 0;

/** The umask the sidecar writes its data dir with. */
export const dataDirUmask = (): number => (groupShared() ? 0o007 : 0o077);

/** Set once, at the CLI's entry, for every command: each writes only files that are its own. */
export function restrictFileModes(): void {
  process.umask(dataDirUmask());
}
