# kjit: one-command set-up, build, test and demo.
#   make demo   - set up, build, run the seed examples on the best device present
#   make test   - set up, build, run every test (C++ and Python)
#   make check PYTHON=python3 - build and test with an existing Python that already has numpy,
#                 pytest, nanobind and scikit-build-core (no virtual environment, no downloads)

PYTHON ?= .venv/bin/python
# The interpreter's full path (resolved when used: the virtual environment may not exist yet).
PYTHON_EXE = $(shell $(PYTHON) -c 'import sys; print(sys.executable)')
BUILD ?= build
JOBS ?= $(shell nproc)
# torch and jax: the PyTorch tests (kjit.torch, torch tensors in calls) and the JAX tests
# (kjit.jax, its XLA FFI handlers) run on every submission; so do the MLX tests, on MLX's CPU
# build for Linux ("mlx[cpu]", quoted for the shell). mkdocs and mkdocstrings: the docs build's
# test; matplotlib: the plots of the benchmark results (bench/plot.py) and their test.
VENV_PACKAGES = numpy nanobind scikit-build-core pytest pytest-xdist ml_dtypes mypy torch jax \
	"mlx[cpu]" mkdocs "mkdocstrings[python]" matplotlib
# The CPU benchmarks also compare against OpenCL on PoCL (Debian: pocl-opencl-icd).
BENCH_PACKAGES = pyopencl

# With the default interpreter the targets create the virtual environment first; with
# PYTHON=... they use that interpreter as it is (no downloads).
SETUP = $(if $(filter .venv/bin/python,$(PYTHON)),venv,)

.PHONY: all venv build test check demo bench clean format docs-images plots

all: build

.venv/.done:
	python3 -m venv .venv
	.venv/bin/python -m pip install --quiet --upgrade pip
	.venv/bin/python -m pip install --quiet $(VENV_PACKAGES)
	touch $@

venv: .venv/.done

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE=$(PYTHON_EXE)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Tests run with a private cache directory so that they never see a user's cache.
check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	PYTHONPATH=$(abspath $(BUILD))/python $(PYTHON) -m pytest tests/python -n $(JOBS) -q

test: $(SETUP)
	$(MAKE) check

demo: $(SETUP) build
	PYTHONPATH=$(abspath $(BUILD))/python $(PYTHON) examples/myexp.py
	PYTHONPATH=$(abspath $(BUILD))/python $(PYTHON) examples/invert_3x3.py
	$(BUILD)/myexp_cpp

.venv/.bench: .venv/.done
	.venv/bin/python -m pip install --quiet $(BENCH_PACKAGES)
	touch $@

bench: $(SETUP) $(if $(SETUP),.venv/.bench,) build
	PYTHONPATH=$(abspath $(BUILD))/python $(PYTHON) bench/cpu.py
	PYTHONPATH=$(abspath $(BUILD))/python $(PYTHON) bench/cooperative.py --cpu

# The diagrams in docs/, rendered from their Graphviz sources (Debian: graphviz).
docs-images:
	for f in docs/images/*.dot; do dot -Tsvg $$f -o $${f%.dot}.svg; done

# The plots in docs/img/, drawn from the tables of bench/results/*.md.
plots: $(SETUP)
	$(PYTHON) bench/plot.py

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp')

clean:
	rm -rf $(BUILD)
