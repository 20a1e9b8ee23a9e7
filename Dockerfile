# No `# syntax=` line: BuildKit would fetch that frontend from a registry, which a mirror-only CI cannot reach.
# egress-agent: the egress sidecar (`egress-agent start`, the default) and, with another command, the beacon service
# or the agent server (`a2a serve`).
#   docker build -t egress-agent .
#   docker run --read-only --tmpfs /tmp -v egress-outbox:/data -e PLATFORM_LICENSE_KEY=... egress-agent
# compose.yaml and helm/egress-agent/ run this image with a mounted config, read-only, as UID 10001.

# ---- build: every dependency (esbuild), src/ bundled into dist/ --------------------------------------------------
FROM node:24-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency needs an install script. better-sqlite3 ships prebuilt N-API binaries (linux x64 and
# arm64, glibc and musl) in its package, and package.json's allowScripts already denies it and protobufjs their
# scripts; slim has no compiler, so a source build could only fail here.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build.ts ./scripts/
COPY src ./src
# dist/ is what bin/egress-agent.js runs when it exists (it falls back to src/*.ts only in a checkout).
RUN npm run build

# ---- runtime: the packages the bundle leaves out (dist/runtime-package.json), dist/, bin/ -----------------------
FROM node:24-slim AS runtime
ENV NODE_ENV=production
# bubblewrap: `controlplane serve` runs each deployment's code in namespaces of its own (agentServer.isolation).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Only better-sqlite3, pg and LangGraph: everything else is inside dist/. The lockfile pins their versions.
COPY --from=build /src/dist/runtime-package.json ./package.json
COPY package-lock.json ./
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund --cache /tmp/npm-cache && rm -rf /tmp/npm-cache /root/.npm
COPY bin ./bin
COPY --from=build /src/dist ./dist
# The example graph for `egress-agent a2a serve` (compose's agent-server profile). Graphs under /app resolve the
# image's @langchain packages; Node strips their TypeScript types as it loads them.
COPY examples ./examples
# The default config: every key at its default, as documented in the repository. Mount your own over it (compose,
# the chart's ConfigMap) or name another with EGRESS_CONFIG.
COPY config/egress.yaml /etc/egress-agent/egress.yaml
# `egress-agent` on PATH, as `npm install -g` would link it. A numeric, non-root user (a passwd entry too: some
# libraries ask the OS for the user name). /data is created owned by it, so a fresh named volume inherits that owner,
# and by group 0 with group write: runtimes that run images under a random UID in group 0 (OpenShift) can write it.
RUN ln -s /app/bin/egress-agent.js /usr/local/bin/egress-agent \
 && groupadd --system --gid 10001 egress \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin egress \
 && mkdir /data && chown 10001:0 /data && chmod 0770 /data

# Read-only root filesystem: the only writes are the outbox (SQLite + WAL) under /data. HOME and TMPDIR point at /tmp
# (mount a tmpfs there; SQLite may spill large sorts to TMPDIR), so nothing tries to write anywhere else.
# EGRESS_CONFIG rather than a --config in CMD, so `-e EGRESS_CONFIG=...` alone switches the file (a --config beats it).
# EGRESS_HEALTH_FILE: where the serving command announces its health URL for the HEALTHCHECK.
ENV HOME=/tmp \
    TMPDIR=/tmp \
    EGRESS_CONFIG=/etc/egress-agent/egress.yaml \
    EGRESS_HEALTH_FILE=/tmp/egress-agent.health
# The working directory is / so that the repository's relative `dataDir: ./data` resolves to the /data volume.
WORKDIR /
USER 10001:10001
VOLUME ["/data"]
# The local API and OTLP/HTTP receiver. The shipped config listens on 127.0.0.1 (the instance shares the network
# namespace, as in a pod); to publish the port, run `start --listen 0.0.0.0:4318`.
EXPOSE 4318
# Whatever the command (start, beacon, a2a serve, controlplane serve) and its port: the service announced its health
# URL in EGRESS_HEALTH_FILE once listening, and `healthcheck` probes that (Node itself: slim has no curl or wget).
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["egress-agent", "healthcheck"]
ENTRYPOINT ["egress-agent"]
CMD ["start"]
