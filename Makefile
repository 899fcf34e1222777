# A thin layer over scripts/setup.sh and meson. Every target installs what is missing first.
#
#   make demo   set up, build, and run the demo on kubesim
#   make test   set up, build (warnings are errors), and run every test, including a bounded fuzz run
#   make bench  set up, build as the image does (release, NDEBUG), and run the benchmarks

BUILD ?= build
FUZZ_BUILD ?= build-fuzz
BENCH_BUILD ?= build-release
FUZZ_SECONDS ?= 30
MESON ?= meson

.PHONY: all setup build fuzz-build test demo bench clean

all: build

setup:
	@./scripts/setup.sh

$(BUILD)/build.ninja:
	$(MESON) setup $(BUILD) --werror

# The benchmarks measure what the image ships: the Dockerfile's build options.
$(BENCH_BUILD)/build.ninja:
	$(MESON) setup $(BENCH_BUILD) --buildtype=release -Db_ndebug=true

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

demo: build
	./scripts/demo.sh $(BUILD)

# Each benchmark prints one JSON line per figure: {"name", "value", "unit", "goal"}.
bench: setup $(BENCH_BUILD)/build.ninja
	ninja -C $(BENCH_BUILD)
	$(MESON) test -C $(BENCH_BUILD) --benchmark --verbose --num-processes 1

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD) $(BENCH_BUILD)
