# No `# syntax=` line: BuildKit would fetch that frontend from a registry, which a mirror-only CI cannot reach.
# egress-agent: the egress sidecar (`egress-agent start`, the default) and, with another command, the beacon service
# or the agent server (`a2a serve`).
#   make image        (docker build with the OCI labels' build args: version, git revision, source, time)
#   docker run --read-only -v egress-outbox:/data -e PLATFORM_LICENSE_KEY=... egress-agent
# compose.yaml and helm/egress-agent/ run this image with a mounted config, read-only, as UID 10001.

# ---- build: every dependency (esbuild), src/ bundled into dist/, the SBOM ---------------------------------------
FROM node:24-slim AS build
# `npm sbom` names the application after this directory.
WORKDIR /egress-agent
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency needs an install script. better-sqlite3 ships prebuilt N-API binaries (linux x64 and
# arm64, glibc and musl) in its package, and package.json's allowScripts already denies it and protobufjs their
# scripts; slim has no compiler, so a source build could only fail here.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build.ts ./scripts/
COPY src ./src
# dist/ is what bin/egress-agent.js runs when it exists (it falls back to src/*.ts only in a checkout). Its source
# maps stay here: Node reads them only with --enable-source-maps, and they are three quarters of dist/.
RUN npm run build && rm dist/*.map
# The SBOM (CycloneDX): every production dependency, those bundled into dist/ and those installed beside it, from the
# lockfile; no build tool. Not `npm sbom --omit=dev` on the full tree: it also leaves out production packages that a
# development one depends on too (pino, pg-types); dropping the development packages first lists exactly the rest.
RUN npm pkg delete devDependencies \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm sbom --sbom-format=cyclonedx --sbom-type=application > sbom.cdx.json
# The version label must be package.json's (make image passes it); an image built without it has an empty label.
ARG VERSION=""
RUN test -z "$VERSION" || test "$VERSION" = "$(node -p 'require("./package.json").version')" \
 || { echo "VERSION=$VERSION is not package.json's version" >&2; exit 1; }

# ---- deps: the packages the bundle leaves out (dist/runtime-package.json), less every file that never runs ------
FROM node:24-slim AS deps
WORKDIR /app
# Only better-sqlite3, pg and LangGraph: everything else is inside dist/. The lockfile pins their versions.
COPY --from=build /egress-agent/dist/runtime-package.json ./package.json
COPY package-lock.json ./
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund
# Other platforms' binaries, SQLite's sources, TypeScript, maps, docs (scripts/prune-runtime.ts says which and why);
# it then loads every package, so a pruning mistake fails this build.
COPY scripts/prune-runtime.ts /tmp/
RUN node /tmp/prune-runtime.ts /app

# ---- runtime: Node, bubblewrap, dist/, bin/ and the pruned packages; no npm, no compiler headers -----------------
# Debian slim with node:24-slim's Node binary (the official build: it needs only glibc and libstdc++, which slim has),
# the same Node as the build, without the npm, npx and corepack that node:24-slim adds and nothing here runs.
FROM debian:bookworm-slim AS runtime
ENV NODE_ENV=production
COPY --from=build /usr/local/bin/node /usr/local/bin/node
# bubblewrap: `controlplane serve` runs each deployment's code in namespaces of its own (agentServer.isolation).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=deps /app/package.json ./package.json
COPY --from=deps /app/node_modules ./node_modules
COPY bin ./bin
COPY --from=build /egress-agent/dist ./dist
# The image's software bill of materials (CycloneDX JSON): `docker run --rm --entrypoint cat IMAGE /app/sbom.cdx.json`.
COPY --from=build /egress-agent/sbom.cdx.json ./sbom.cdx.json
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

# Read-only root filesystem: the only writes are under /data (the outbox, SQLite + WAL, and the health file). No
# writable /tmp is needed (test/packaging/read-only.e2e.test.ts: the sidecar takes its largest batch without one).
# HOME and TMPDIR point there for what a mounted tmpfs offers: V8's compile cache, which is simply off without one.
# EGRESS_CONFIG rather than a --config in CMD, so `-e EGRESS_CONFIG=...` alone switches the file (a --config beats it).
# EGRESS_HEALTH_FILE: where the serving command announces its health URL for the HEALTHCHECK, on the /data volume,
# which even `--read-only` without a tmpfs leaves writable.
ENV HOME=/tmp \
    TMPDIR=/tmp \
    EGRESS_CONFIG=/etc/egress-agent/egress.yaml \
    EGRESS_HEALTH_FILE=/data/egress-agent.health
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
# OCI annotations (`docker inspect`), last so that a new revision rebuilds nothing above. `make image` sets them from
# package.json and git; licenses is package.json's.
ARG VERSION=""
ARG REVISION=""
ARG CREATED=""
ARG SOURCE=""
LABEL org.opencontainers.image.title="egress-agent" \
      org.opencontainers.image.description="Self-hosted telemetry egress sidecar and the beacon service it reports to" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
