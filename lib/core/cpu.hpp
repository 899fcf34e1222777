#pragma once
// What the CPU runs beyond the build's baseline, checked once at run time: a hot loop with a
// second version built for AVX2 (__attribute__((target("avx2")))) takes it where the CPU has it,
// for the same results.

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SPOTSHIFT_AVX2 1
#endif

namespace spotshift {

#if defined(SPOTSHIFT_AVX2)
inline bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

}  // namespace spotshift
