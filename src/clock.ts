/**
 * The one shape of an injected clock: epoch milliseconds, as Date.now gives them. A number allocates nothing on hot
 * paths and is what tests' simulated clocks hold; code that needs a Date makes one where it uses it (`new Date(now())`).
 */
export type Clock = () => number;

/**
 * Calls back after `ms` of the injected clock, as setTimeout does for Date.now. A loop whose delay is a difference of
 * Clock readings (the license's next verification, the next usage window) waits it here, so a test's faster clock and
 * its timers agree.
 */
export type SetClockTimeout = (callback: () => void, ms: number) => NodeJS.Timeout;
