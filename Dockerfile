# syntax=docker/dockerfile:1
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

# ---- runtime: production dependencies, dist/, bin/ -------------------------------------------------------------
FROM node:24-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund --cache /tmp/npm-cache && rm -rf /tmp/npm-cache /root/.npm
COPY bin ./bin
COPY --from=build /src/dist ./dist
# The example graph for `egress-agent a2a serve` (compose's agent-server profile). Graphs under /app resolve the
# image's @langchain packages; Node strips their TypeScript types as it loads them.
COPY examples ./examples
# The default config: every key at its default, as documented in the repository. Mount your own over it (compose,
# the chart's ConfigMap) or name another with EGRESS_CONFIG.
COPY config/egress.yaml /etc/egress-agent/egress.yaml
# `egress-agent` on PATH, as `npm install -g` would link it. A numeric, non-root user (a passwd entry too: some
# libraries ask the OS for the user name). /data is created owned by it, so a fresh named volume inherits that owner.
RUN ln -s /app/bin/egress-agent.js /usr/local/bin/egress-agent \
 && groupadd --system --gid 10001 egress \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin egress \
 && mkdir /data && chown 10001:10001 /data && chmod 0750 /data

# Read-only root filesystem: the only writes are the outbox (SQLite + WAL) under /data. HOME and TMPDIR point at /tmp
# (mount a tmpfs there; SQLite may spill large sorts to TMPDIR), so nothing tries to write anywhere else.
# EGRESS_CONFIG rather than a --config in CMD, so `-e EGRESS_CONFIG=...` alone switches the file (a --config beats it).
ENV HOME=/tmp \
    TMPDIR=/tmp \
    EGRESS_CONFIG=/etc/egress-agent/egress.yaml
# The working directory is / so that the repository's relative `dataDir: ./data` resolves to the /data volume.
WORKDIR /
USER 10001:10001
VOLUME ["/data"]
# The local API and OTLP/HTTP receiver. The shipped config listens on 127.0.0.1 (the instance shares the network
# namespace, as in a pod); to publish the port, run `start --listen 0.0.0.0:4318`.
EXPOSE 4318
# Node itself (slim has no curl or wget). 127.0.0.1 answers whether the sidecar listens on loopback or 0.0.0.0.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:4318/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["egress-agent"]
CMD ["start"]
