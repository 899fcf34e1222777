// The pools behind InternedString and InternedList (a pod's tolerations): one handle per distinct
// value, from any thread, whatever the per-thread caches in front of them hold; a string goes
// with its last handle.

#include "model/intern.hpp"
#include "model/pod.hpp"
#include "model/taints.hpp"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using spotshift::model::intern_stats;
using spotshift::model::InternedString;

namespace {

// Four threads each take the handle of every value 0..n-1, two of them walking from the end, so
// they meet the values in different orders: handles[t][i] is thread t's handle for value i.
template <class Handle>
std::vector<std::vector<Handle>> handles_from_four_threads(int n, const std::function<Handle(int)>& handle_of) {
  std::vector<std::vector<Handle>> handles(4, std::vector<Handle>(static_cast<size_t>(n)));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < handles.size(); ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < n; ++k) {
        int i = t % 2 ? n - 1 - k : k;
        handles[t][size_t(i)] = handle_of(i);
      }
    });
  for (auto& th : threads) th.join();
  return handles;
}

// Runs f on a thread of its own. A thread's cache holds a handle to each string it met last and
// lets go of them when the thread ends, so pool counts taken around this do not depend on what
// the test's own thread interned before.
void on_a_thread(const std::function<void()>& f) { std::thread(f).join(); }

}  // namespace

TEST_CASE("equal strings share one handle; different ones never do", "[intern]") {
  // Lengths around the cache's in-place limit (22 bytes), a shared prefix, and embedded NULs.
  std::vector<std::string> texts = {"a",
                                    "ab",
                                    std::string("a\0b", 3),
                                    std::string("a\0c", 3),
                                    "",
                                    std::string(21, 'x'),
                                    std::string(22, 'x'),
                                    std::string(23, 'x'),
                                    std::string(200, 'x'),
                                    std::string(22, 'x') + "y",
                                    "node.kubernetes.io/not-ready",
                                    "node.kubernetes.io/not-readz"};
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
  auto text = [](int i) { return fmt::format("intern-test-{}-{}", i, std::string(size_t(i % 40), 'z')); };
  on_a_thread([&] {
    for (int i = 0; i < n; ++i) handles.emplace_back(text(i));
  });
  auto after = intern_stats();
  CHECK(after.strings - before.strings == size_t(n));
  on_a_thread([&] {
    for (int i = n; i-- > 0;) {
      REQUIRE(handles[size_t(i)].view() == text(i));
      REQUIRE(InternedString(text(i)) == handles[size_t(i)]);
    }
  });
  CHECK(intern_stats().strings == after.strings);  // looking them up again adds nothing
}

TEST_CASE("threads interning the same strings get the same handles", "[intern]") {
  const int per_thread = 20000;
  auto handles = handles_from_four_threads<InternedString>(per_thread, [](int i) { return InternedString(fmt::format("threaded-{}", i)); });
  for (int i = 0; i < per_thread; ++i) {
    const void* expected = InternedString(fmt::format("threaded-{}", i)).id();
    for (const auto& thread_handles : handles) REQUIRE(thread_handles[size_t(i)].id() == expected);
  }
}

TEST_CASE("a string is freed with its last handle, and the pool finds every string still held", "[intern]") {
  // Each step that interns runs on a thread of its own (on_a_thread).
  auto text = [](int i) { return fmt::format("freed-test-{}-{}", i, std::string(size_t(i % 30), 'q')); };
  const auto before = intern_stats();
  const int n = 6000;  // the table grows past 8,192 slots: holes left by erasing fall amid long probe runs
  std::vector<InternedString> held(static_cast<size_t>(n));
  on_a_thread([&] {
    for (int i = 0; i < n; ++i) held[size_t(i)] = InternedString(text(i));
  });
  CHECK(intern_stats().strings == before.strings + size_t(n));

  // Copies count: dropping the original leaves the string for the copy.
  InternedString copy = held[0];
  held[0] = InternedString();
  CHECK(intern_stats().strings == before.strings + size_t(n));
  CHECK(copy.view() == text(0));
  held[0] = std::move(copy);
  CHECK(copy.empty());

  // Drop every third string, in a scrambled order.
  std::vector<int> order;
  for (int i = 0; i < n; i += 3) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k) std::swap(order[k], order[(k * 7919) % order.size()]);
  for (int i : order) held[size_t(i)] = InternedString();
  CHECK(intern_stats().strings == before.strings + size_t(n) - order.size());

  // Every string still held is found again as the same handle: erasing kept every probe run whole.
  std::vector<const void*> again(static_cast<size_t>(n));
  on_a_thread([&] {
    for (int i = 0; i < n; ++i) again[size_t(i)] = InternedString(text(i)).id();
  });
  for (int i = 0; i < n; ++i)
    if (i % 3 != 0) REQUIRE(again[size_t(i)] == held[size_t(i)].id());
  CHECK(intern_stats().strings == before.strings + size_t(n) - order.size());  // the dropped ones came and went again

  held.clear();
  CHECK(intern_stats().strings == before.strings);
  CHECK(intern_stats().bytes == before.bytes);
}

TEST_CASE("handles made, copied and dropped on different threads at once count right", "[intern]") {
  const auto before = intern_stats();
  std::mutex mutex;
  std::vector<InternedString> shelf(64);  // handles pass through here from one thread to another
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 40000; ++k) {
        const int i = (k * (t + 1)) % 96;  // 96 strings on 64 shelf places: some strings come and go
        const std::string text = fmt::format("stress-{}", i);
        InternedString h(text);
        InternedString copy = h;
        if (copy.view() != text) ++wrong;
        {
          std::lock_guard lock(mutex);
          std::swap(shelf[size_t(i % 64)], h);  // h now holds what another thread left there
        }
        if (!h.empty() && !h.view().starts_with("stress-")) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  for (const auto& h : shelf)
    if (!h.empty()) CHECK(InternedString(h.str()) == h);
  shelf.clear();
  CHECK(intern_stats().strings == before.strings);
}

TEST_CASE("a decoded pod's strings leave the pool with the pod: Jobs that come and go leave nothing", "[intern]") {
  // A Job's pod: its uid and name appear as labels and as the owner, each Job's its own.
  auto job_pod = [](int i) {
    return fmt::format(R"({{"metadata":{{"name":"report-{0}-x7k2p","namespace":"batch","uid":"pod-{0}",
      "labels":{{"batch.kubernetes.io/controller-uid":"uid-{0}","batch.kubernetes.io/job-name":"report-{0}",
                 "controller-uid":"uid-{0}","job-name":"report-{0}"}},
      "ownerReferences":[{{"apiVersion":"batch/v1","kind":"Job","name":"report-{0}","uid":"uid-{0}","controller":true}}]}},
      "spec":{{"nodeName":"node-1","containers":[{{"name":"c","resources":{{"requests":{{"cpu":"100m"}}}}}}]}},
      "status":{{"phase":"Running"}}}})",
                       i);
  };
  const auto before = intern_stats();
  std::vector<spotshift::model::Pod> live;
  on_a_thread([&] {
    for (int i = 0; i < 10000; ++i) {
      auto pod = spotshift::model::decode_pod(job_pod(i));
      REQUIRE(pod.has_value());
      REQUIRE(pod->controller->uid.view() == fmt::format("uid-{}", i));
      live.push_back(std::move(*pod));
      if (live.size() > 50) live.erase(live.begin());  // the cache holds the last 50 Jobs' pods
    }
  });
  // The 50 pods still cached hold two strings each; the rest went with their pods.
  CHECK(intern_stats().strings <= before.strings + 50 * 2 + 16);
  live.clear();
  CHECK(intern_stats().strings <= before.strings + 16);  // the few every Job shares, at most
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
      v.push_back(
          toleration(fmt::format("list-test/{}", i), TolerationOp::kEqual, fmt::format("{}", k), TaintEffect::kNoSchedule, std::nullopt));
    return v;
  };
  const int n = 3000;
  // Lists are never freed, so their ids stay valid after the handles go.
  auto ids = handles_from_four_threads<const void*>(n, [&](int i) { return Tolerations(list_of(i)).id(); });
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
