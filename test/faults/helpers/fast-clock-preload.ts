/**
 * Preloaded (`--import`) into a child process by `fastClock().env`: from FAST_CLOCK_EPOCH on, the process's Date
 * runs FAST_CLOCK_RATE times faster than real time. `Date.now()`, `new Date()` and `Date()` read the fast clock;
 * dates built from a value are untouched. Timers and `performance.now()` stay real.
 */
const epoch = Number(process.env.FAST_CLOCK_EPOCH);
const rate = Number(process.env.FAST_CLOCK_RATE);

if (epoch > 0 && rate > 0) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const fastNow = () => epoch + (realNow() - epoch) * rate;
  const FastDate = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return new RealDate(fastNow()).toString();
    return args.length === 0 ? new RealDate(fastNow()) : Reflect.construct(RealDate, args);
  } as unknown as DateConstructor;
  Object.defineProperties(FastDate, {
    prototype: { value: RealDate.prototype },
    now: { value: fastNow },
    parse: { value: RealDate.parse },
    UTC: { value: RealDate.UTC },
  });
  globalThis.Date = FastDate;
}
