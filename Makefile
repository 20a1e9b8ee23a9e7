# `make demo` and `make test` work on a fresh machine: scripts/node-env.sh brings Node 24 and the dependencies.
SHELL := /bin/bash
ENV := source scripts/node-env.sh &&

.PHONY: demo test test-faults typecheck lint format bench build beacon
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
