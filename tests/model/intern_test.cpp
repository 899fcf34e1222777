// The pools behind InternedString and InternedList (a pod's tolerations): one handle per distinct
// value, from any thread, whatever the per-thread caches in front of them hold.

#include "model/intern.hpp"
#include "model/taints.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using spotshift::model::InternedString;
using spotshift::model::intern_stats;

namespace {

// Four threads each take the handle of every value 0..n-1, two of them walking from the end, so
// they meet the values in different orders: ids[t][i] is thread t's handle for value i.
std::vector<std::vector<const void*>> handles_from_four_threads(int n, const std::function<const void*(int)>& handle_of) {
  std::vector<std::vector<const void*>> ids(4, std::vector<const void*>(size_t(n)));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < ids.size(); ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < n; ++k) {
        int i = t % 2 ? n - 1 - k : k;
        ids[t][size_t(i)] = handle_of(i);
      }
    });
  for (auto& th : threads) th.join();
  return ids;
}

}  // namespace

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
  auto ids = handles_from_four_threads(per_thread, [](int i) { return InternedString(fmt::format("threaded-{}", i)).id(); });
  for (int i = 0; i < per_thread; ++i) {
    const void* expected = InternedString(fmt::format("threaded-{}", i)).id();
    for (const auto& thread_ids : ids) REQUIRE(thread_ids[size_t(i)] == expected);
  }
}

using spotshift::model::TaintEffect;
using spotshift::model::Toleration;
using spotshift::model::TolerationOp;
using spotshift::model::Tolerations;

namespace {

Toleration toleration(std::string_view key, TolerationOp op, std::string_view value, std::optional<TaintEffect> effect,
                      std::optional<int64_t> seconds) {
  Toleration t;
  t.key = InternedString(key);
  t.op = op;
  t.value = InternedString(value);
  t.effect = effect;
  t.toleration_seconds = seconds;
  return t;
}

}  // namespace

TEST_CASE("equal toleration lists are one list; a list differing in any field or in order is another", "[intern]") {
  const Toleration base = toleration("node.kubernetes.io/not-ready", TolerationOp::kExists, "", TaintEffect::kNoExecute, 300);
  const Toleration other = toleration("node.kubernetes.io/unreachable", TolerationOp::kExists, "", TaintEffect::kNoExecute, 300);
  std::vector<Toleration> variants = {
      base,
      toleration("node.kubernetes.io/not-readz", TolerationOp::kExists, "", TaintEffect::kNoExecute, 300),
      toleration("node.kubernetes.io/not-ready", TolerationOp::kEqual, "", TaintEffect::kNoExecute, 300),
      toleration("node.kubernetes.io/not-ready", TolerationOp::kExists, "x", TaintEffect::kNoExecute, 300),
      toleration("node.kubernetes.io/not-ready", TolerationOp::kExists, "", TaintEffect::kNoSchedule, 300),
      toleration("node.kubernetes.io/not-ready", TolerationOp::kExists, "", std::nullopt, 300),
      toleration("node.kubernetes.io/not-ready", TolerationOp::kExists, "", TaintEffect::kNoExecute, 301),
      toleration("node.kubernetes.io/not-ready", TolerationOp::kExists, "", TaintEffect::kNoExecute, std::nullopt),
      toleration("node.kubernetes.io/not-ready", TolerationOp::kExists, "", TaintEffect::kNoExecute, 0),
  };
  std::vector<Tolerations> lists;
  for (const auto& v : variants) lists.push_back(Tolerations({v, other}));
  for (size_t i = 0; i < lists.size(); ++i) {
    INFO("variant " << i);
    REQUIRE(lists[i].size() == 2);
    CHECK(lists[i][0] == variants[i]);
    CHECK(lists[i][1] == other);
    std::vector<Toleration> copy = {variants[i], other};  // equal content from other storage
    CHECK(Tolerations(copy) == lists[i]);
    CHECK(Tolerations(copy).id() == lists[i].id());
    for (size_t j = 0; j < i; ++j) CHECK_FALSE(lists[i] == lists[j]);
  }
  CHECK_FALSE(Tolerations({other, base}) == Tolerations({base, other}));  // order is part of a list
  CHECK_FALSE(Tolerations({base}) == Tolerations({base, base}));
  CHECK(Tolerations(std::vector<Toleration>{}) == Tolerations());
  CHECK(Tolerations().empty());
  CHECK(Tolerations().begin() == Tolerations().end());
}

TEST_CASE("many toleration lists from several threads: one list per content, whatever the caches held", "[intern]") {
  // 3,000 distinct lists, far more than a thread's cache of lists holds, met in different orders.
  auto list_of = [](int i) {
    std::vector<Toleration> v;
    for (int k = 0; k <= i % 3; ++k)
      v.push_back(toleration(fmt::format("list-test/{}", i), TolerationOp::kEqual, fmt::format("{}", k), TaintEffect::kNoSchedule,
                             std::nullopt));
    return v;
  };
  const int n = 3000;
  auto ids = handles_from_four_threads(n, [&](int i) { return Tolerations(list_of(i)).id(); });
  std::vector<const void*> seen;
  for (int i = 0; i < n; ++i) {
    Tolerations list(list_of(i));
    REQUIRE(list.size() == size_t(i % 3 + 1));
    REQUIRE(list[0].key.view() == fmt::format("list-test/{}", i));
    for (const auto& thread_ids : ids) REQUIRE(thread_ids[size_t(i)] == list.id());
    seen.push_back(list.id());
  }
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
}
