# A thin layer over scripts/setup.sh and meson. Every target installs what is missing first.
#
#   make demo   set up, build, and run the demo on kubesim
#   make test   set up, build (warnings are errors), and run every test, including a bounded fuzz run
#   make bench  set up, build as the image does (release, NDEBUG), and run the benchmarks
#   make format format the C++ sources as .clang-format says (make test checks it)
#   make image  the operator image as an OCI archive, without a container engine
#               (build-image/spotshift-image.oci.tar; docs/install.md, "The image")
#   make asan   set up, build with AddressSanitizer and UBSan, and run every test under them
#               (not part of `make test`: the build takes about 20 minutes on 2 cores)

BUILD ?= build
FUZZ_BUILD ?= build-fuzz
BENCH_BUILD ?= build-release
ASAN_BUILD ?= build-asan
FUZZ_SECONDS ?= 30
MESON ?= meson

.PHONY: all setup setup-demo build fuzz-build test demo bench asan clean format image

all: build

setup:
	@./scripts/setup.sh

# The demo runs on kubesim: of the real Kubernetes components it needs kubectl only.
setup-demo:
	@./scripts/setup.sh kubectl

$(BUILD)/build.ninja:
	$(MESON) setup $(BUILD) --werror

# The benchmarks measure what the image ships: the Dockerfile's build options.
$(BENCH_BUILD)/build.ninja:
	$(MESON) setup $(BENCH_BUILD) --buildtype=release -Db_ndebug=true

# Not --werror: GCC 12 warns falsely (maybe-uninitialized inside std::regex) when sanitizing.
$(ASAN_BUILD)/build.ninja:
	$(MESON) setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false

$(FUZZ_BUILD)/build.ninja:
	CXX=clang++ $(MESON) setup $(FUZZ_BUILD) --werror -Dfuzz=true -Dfuzz_seconds=$(FUZZ_SECONDS)

build: setup $(BUILD)/build.ninja
	ninja -C $(BUILD)

fuzz-build: setup $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)

# Both suites always run; the summary line counts every meson test result.
test: build fuzz-build
	@rc=0; \
	$(MESON) test -C $(BUILD) --print-errorlogs || rc=1; \
	$(MESON) test -C $(FUZZ_BUILD) --print-errorlogs || rc=1; \
	./scripts/test-summary.sh $(BUILD) $(FUZZ_BUILD) || rc=1; \
	exit $$rc

format: setup
	./scripts/format.sh

demo: setup-demo $(BUILD)/build.ninja
	ninja -C $(BUILD)
	./scripts/demo.sh $(BUILD)

# Each benchmark prints one JSON line per figure: {"name", "value", "unit", "goal"}.
# Only what the benchmarks run: the tests' own executables are not built in release.
BENCH_TARGETS = tests/bench/sched_bench tests/bench/plan_bench tests/bench/scenario_gen \
  tests/bench/kubesim_bench operator/spotshift
bench: setup $(BENCH_BUILD)/build.ninja
	ninja -C $(BENCH_BUILD) $(BENCH_TARGETS)
	$(MESON) test -C $(BENCH_BUILD) --benchmark --no-rebuild --verbose --num-processes 1

# Every test under AddressSanitizer and UBSan but the image's (its shared libraries are not the
# image's in this build); a report fails the test (halt_on_error); timeouts are tripled.
asan: setup $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(MESON) test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 3 --no-suite image

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD) $(BENCH_BUILD) $(ASAN_BUILD) build-image

image: setup-demo
	scripts/build-image.sh
