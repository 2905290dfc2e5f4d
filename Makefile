# `make test` is the one command CI runs (.ci/run) and the README gives.
# It needs no root: it makes .venv from requirements.txt, installs the package in editable mode,
# and runs the whole test suite.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Quiet TensorFlow's C++ logging in tests and notebooks.
export TF_CPP_MIN_LOG_LEVEL ?= 2
# Offline data (see README): CI points this at ../shared/data when that folder exists.
export TRANSFORMER_BOOK_DATA ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)

.PHONY: test install book clean

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

test: $(STAMP)
	$(BIN)/python -m pytest tests

book: $(STAMP)
	@echo "The book is not written yet: 'make book' is filled in by the book issue." >&2
	@exit 1

clean:
	rm -rf $(VENV) _build .pytest_cache transformer_lib.egg-info
