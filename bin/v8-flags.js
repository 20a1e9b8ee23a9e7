// V8 flags bin/egress-agent.js sets as it starts rather than in its `#!` line: Linux before 5.1 reads only 127 bytes of
// that line, and the flags there already take 109. These are read by V8 at every collection, so setting them before
// the CLI loads is as good as the command line (checked with --trace-incremental-marking: the same limits). The bench
// and the tests pass them on the command line to the processes that stand for the sidecar (test/helpers/processes.ts).
// `--expose-gc` is not among them: its `gc` is made once the context exists (bin/egress-agent.js).
export const RUNTIME_V8_FLAGS = ["--heap-growing-percent=50"];
