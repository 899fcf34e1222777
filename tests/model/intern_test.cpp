// The string pool behind InternedString: one handle per distinct string, from any thread,
// whatever the per-thread cache in front of it holds.

#include "model/intern.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>
#include <thread>
#include <vector>

using spotshift::model::InternedString;
using spotshift::model::intern_stats;

TEST_CASE("equal strings share one handle; different ones never do", "[intern]") {
  // Lengths around the cache's in-place limit (22 bytes), a shared prefix, and embedded NULs.
  std::vector<std::string> texts = {"a", "ab", std::string("a\0b", 3), std::string("a\0c", 3), "", std::string(21, 'x'),
                                    std::string(22, 'x'), std::string(23, 'x'), std::string(200, 'x'),
                                    std::string(22, 'x') + "y", "node.kubernetes.io/not-ready", "node.kubernetes.io/not-readz"};
  std::vector<InternedString> first;
  for (const auto& t : texts) first.emplace_back(t);
  for (size_t i = 0; i < texts.size(); ++i) {
    INFO("string " << i);
    CHECK(first[i].view() == texts[i]);
    CHECK(InternedString(std::string(texts[i])) == first[i]);  // a copy of the text, another address
    for (size_t j = 0; j < i; ++j) CHECK_FALSE(first[i] == first[j]);
  }
  CHECK(InternedString("") == InternedString());
}

TEST_CASE("many strings: the pool grows and handles stay valid and unique", "[intern]") {
  auto before = intern_stats();
  std::vector<InternedString> handles;
  const int n = 50000;  // far more than the per-thread cache holds, so slots are reused
  for (int i = 0; i < n; ++i) handles.emplace_back(fmt::format("intern-test-{}-{}", i, std::string(size_t(i % 40), 'z')));
  auto after = intern_stats();
  CHECK(after.strings - before.strings == size_t(n));
  for (int i = n; i-- > 0;) {
    std::string text = fmt::format("intern-test-{}-{}", i, std::string(size_t(i % 40), 'z'));
    REQUIRE(handles[size_t(i)].view() == text);
    REQUIRE(InternedString(text) == handles[size_t(i)]);
  }
  CHECK(intern_stats().strings == after.strings);  // looking them up again adds nothing
}

TEST_CASE("threads interning the same strings get the same handles", "[intern]") {
  const int per_thread = 20000;
  std::vector<std::vector<const void*>> ids(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < ids.size(); ++t)
    threads.emplace_back([&, t] {
      // Each thread walks the same strings in its own order.
      for (int k = 0; k < per_thread; ++k) {
        int i = t % 2 ? per_thread - 1 - k : k;
        ids[t].push_back(InternedString(fmt::format("threaded-{}", i)).id());
      }
    });
  for (auto& th : threads) th.join();
  for (int i = 0; i < per_thread; ++i) {
    const void* expected = InternedString(fmt::format("threaded-{}", i)).id();
    for (size_t t = 0; t < ids.size(); ++t) REQUIRE(ids[t][size_t(t % 2 ? per_thread - 1 - i : i)] == expected);
  }
}
