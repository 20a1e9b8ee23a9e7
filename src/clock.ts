/**
 * The one shape of an injected clock: epoch milliseconds, as Date.now gives them. A number allocates nothing on hot
 * paths and is what tests' simulated clocks hold; code that needs a Date makes one where it uses it (`new Date(now())`).
 */
export type Clock = () => number;
