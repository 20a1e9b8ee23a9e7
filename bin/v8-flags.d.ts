/** See bin/v8-flags.js. */
export declare const RUNTIME_V8_FLAGS: readonly string[];
