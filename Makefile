# Shortcuts for the scripts in .ci/ (CI runs exactly those scripts).
.PHONY: install test test-static test-python test-e2e test-js build-js dev

install:        ## venv + editable install + panel build (idempotent)
	bash .ci/setup

test: install   ## every suite, as CI runs it
	bash .ci/test

test-static:    ## ruff (lint), mypy (think_nb/), tsc --noEmit (js/)
	.venv/bin/ruff check . ; r=$$?; .venv/bin/mypy || r=1; (cd js && npm run --silent typecheck) || r=1; exit $$r

test-python:    ## unit, kernel-level and notebook tests
	LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python -m pytest -m "not e2e"

test-e2e:       ## real JupyterLab / Notebook 7 in chromium (own process)
	LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python -m pytest -m e2e

test-js:        ## vitest for the panel
	cd js && npm test

build-js:       ## rebuild think_nb/static/widget.js and the think-nb-cells labextension (think_nb/labextension/)
	cd js && npm run build

dev:            ## rebuild the panel on change
	cd js && npm run dev
