// libFuzzer entry point (built with -Dfuzz=true and clang).
#include <cstddef>
#include <cstdint>

int fuzz_one_input(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return fuzz_one_input(data, size); }
