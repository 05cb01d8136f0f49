# autoheal — top-level entry points. CMake does the building; this file wires the steps together.
#
#   make deps     install Debian packages and prepare the Slurm source (idempotent)
#   make          build everything into build/ (binaries in build/bin, plugins in build/plugins)
#   make test     unit tests, then integration tests on a real local Slurm cluster
#   make e2e      only the fault-handling scenarios on the local cluster (also part of make test);
#                 E2E=REGEX only the matching ones
#   make demo     start the local cluster, run a job through autoheal, show what happened, stop
#   make bench    benchmarks (ratios against a baseline measured in the same run)
#   make install  install into PREFIX (default /usr/local) and Slurm's PluginDir; DESTDIR=/tmp/x
#                 stages the whole tree under /tmp/x instead
#   make deb      a Debian package, $(BUILD)/autoheal_<version>_amd64.deb (prefix /usr)
#   make lint     clang-format check and clang-tidy
#   make catalog  write the JSON Schema's cause/action enums and docs/rules.md's cause table from
#                 the catalog (core/include/autoheal/diag/taxonomy.h)
#   make fuzz     libFuzzer targets (clang, ASan + UBSan) in build-san/, FUZZ_SECONDS each;
#                 FUZZ_SEED=N fixes the seed (CI: 1)
#   make test-asan  everything (plugins, fakes too) built with ASan + UBSan in build-san/, then
#                 the unit tests there (one sanitized build for both: scripts/sanitized_build.sh)
#
# SLURM=24.11 or SLURM=26.05 (default: the host's Slurm, 22.05 on Debian 12): the same target run
# inside a Debian root of that Slurm release (scripts/slurm-root.sh builds it once, cached), in
# its own build folder build-slurm-RELEASE: make, make test, make unit-test, make e2e,
# make integration-test, make deb. make test-matrix runs make test on all three.
#   make slurm-roots  build the roots of the other releases (once)
SHELL := /bin/bash
MAKEFLAGS += --no-print-directory
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
BUILD_TYPE ?= RelWithDebInfo
FUZZ_SECONDS ?= 30

.PHONY: all deps configure build test unit-test integration-test e2e demo bench install deb lint catalog xid-rules fuzz test-asan clean test-matrix slurm-roots

# The host's release, and the others (each in its own root).
HOST_SLURM := 22.05
OTHER_SLURM := $(shell scripts/slurm-root.sh --releases)

all: build

ifneq ($(filter-out $(HOST_SLURM),$(SLURM)),)
# Another Slurm release: the goal again inside its root, with this repository at its own path.
ifeq ($(filter $(SLURM),$(OTHER_SLURM)),)
$(error SLURM=$(SLURM): known releases are $(HOST_SLURM) (the host's) $(OTHER_SLURM))
endif
ROOT_GOALS := $(or $(filter-out test-matrix slurm-roots,$(MAKECMDGOALS)),build)
.PHONY: $(ROOT_GOALS)
$(firstword $(ROOT_GOALS)):
	@scripts/slurm-root.sh $(SLURM) run make -C $(CURDIR) $(ROOT_GOALS) SLURM= \
	    BUILD=build-slurm-$(SLURM) JOBS=$(JOBS) BUILD_TYPE=$(BUILD_TYPE) E2E='$(E2E)'
$(wordlist 2,100,$(ROOT_GOALS)): $(firstword $(ROOT_GOALS))
	@:
else

deps:
	@scripts/deps.sh

$(BUILD)/CMakeCache.txt: CMakeLists.txt
	@slurm_src=$$(scripts/deps.sh --print-slurm-src) && \
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	    -DSLURM_SRC_DIR="$$slurm_src" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# JOBS tests at a time; the cluster tests (and install.staged) each run alone (RUN_SERIAL).
test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

unit-test: build
	@cd $(BUILD) && ctest --output-on-failure -L unit -j $(JOBS)

integration-test: build
	@cd $(BUILD) && ctest --output-on-failure -L integration

# The cluster fixture (cluster.start/stop) comes along with the filtered tests. E2E=REGEX runs
# only the matching scenarios (E2E=Xid79: the short form).
e2e: build
	@cd $(BUILD) && ctest --output-on-failure -R 'cluster\.E2E\.$(E2E)'

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	@scripts/bench.sh $(BUILD)

# PREFIX applies at install time: PREFIX=/usr puts the config in /etc/autoheal, any other prefix
# in PREFIX/etc/autoheal (cmake/install.cmake).
install: build
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

# The package installs into /usr, its config into /etc/autoheal (cmake/package.cmake).
deb: build
	@cd $(BUILD) && set -o pipefail && cpack -G DEB | sed -n 's/^CPack: - package: \(.*\) generated\.$$/\1/p'

lint: configure
	@scripts/lint.sh $(BUILD)

catalog: build
	@scripts/gen_catalog.py --cli $(BUILD)/bin/autoheal

# etc/rules.d/11-xid-catalog.yaml from NVIDIA's Xid catalog as data (shared/data/xid_catalog.jsonl).
xid-rules:
	@scripts/gen_xid_rules.py ../shared/data/xid_catalog.jsonl etc/rules.d/11-xid-catalog.yaml

# The sanitized build folder (build-san/, clang), shared with test-asan, so the gcc build above
# is untouched.
fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZERS)

# The sanitized build folder (build-san/, clang), shared with fuzz; no cluster needed.
test-asan: deps
	@scripts/test-asan.sh

clean:
	rm -rf $(BUILD)
endif

slurm-roots:
	@for r in $(OTHER_SLURM); do scripts/slurm-root.sh $$r >/dev/null || exit 1; done

# Each release in turn; the first failure stops it.
test-matrix:
	@$(MAKE) test SLURM=
	@for r in $(OTHER_SLURM); do $(MAKE) test SLURM=$$r || exit 1; done
