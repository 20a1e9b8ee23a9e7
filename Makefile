# `make demo` and `make test` work on a fresh machine: scripts/node-env.sh brings Node 24 and the dependencies.
SHELL := /bin/bash
ENV := source scripts/node-env.sh &&

.PHONY: demo test test-faults typecheck lint format bench build beacon image
demo:
	@$(ENV) node src/cli.ts demo
beacon:
	@$(ENV) node src/cli.ts beacon --config config/beacon.yaml
test:
	@$(ENV) npm run -s typecheck && npm test && npm run -s test:faults
lint:
	@$(ENV) npx biome ci --error-on-warnings .
format:
	@$(ENV) npx biome check --write .
typecheck:
	@$(ENV) npm run -s typecheck
bench:
	@$(ENV) npm run -s bench
build:
	@$(ENV) npm run -s build
test-faults:
	@$(ENV) npm run -s test:faults

# The image, with its OCI labels: version from package.json, revision and source from git (the remote's URL without
# any credentials in it), created now. IMAGE=registry.internal/egress-agent:0.1.0 make image to name it.
VERSION = $(shell node -p 'require("./package.json").version')
IMAGE ?= egress-agent:$(VERSION)
image:
	docker build -t $(IMAGE) \
	  --build-arg VERSION=$(VERSION) \
	  --build-arg REVISION=$$(git rev-parse HEAD) \
	  --build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) \
	  --build-arg SOURCE="$$(git remote get-url origin 2>/dev/null | sed -E 's#^([a-z]+://)[^/@]*@#\1#')" \
	  .
