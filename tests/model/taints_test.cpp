#include "model/taints.hpp"

#include "support/catch.hpp"

using namespace spotshift::model;

namespace {
Taint taint(const char* k, const char* v, TaintEffect e) { return {InternedString(k), InternedString(v), e}; }
Toleration tol(const char* k, TolerationOp op, const char* v, std::optional<TaintEffect> e) {
  Toleration t;
  t.key = InternedString(k);
  t.op = op;
  t.value = InternedString(v);
  t.effect = e;
  return t;
}
}  // namespace

TEST_CASE("toleration matching follows the scheduler's rules", "[taints]") {
  using E = TaintEffect;
  using Op = TolerationOp;
  struct Case {
    const char* name;
    Toleration t;
    Taint taint;
    bool tolerates;
  };
  const Case cases[] = {
      {"Equal with the same key, value and effect", tol("k", Op::kEqual, "v", E::kNoSchedule), taint("k", "v", E::kNoSchedule), true},
      {"Equal with a different value", tol("k", Op::kEqual, "v", E::kNoSchedule), taint("k", "w", E::kNoSchedule), false},
      {"Exists ignores the value", tol("k", Op::kExists, "", E::kNoSchedule), taint("k", "w", E::kNoSchedule), true},
      {"a different key never matches", tol("j", Op::kExists, "", std::nullopt), taint("k", "", E::kNoSchedule), false},
      {"an empty effect matches every effect", tol("k", Op::kEqual, "v", std::nullopt), taint("k", "v", E::kNoExecute), true},
      {"a different effect does not match", tol("k", Op::kEqual, "v", E::kNoExecute), taint("k", "v", E::kNoSchedule), false},
      {"an empty key with Exists matches every taint", tol("", Op::kExists, "", std::nullopt), taint("any", "x", E::kNoExecute), true},
      {"an empty key with Exists respects the effect", tol("", Op::kExists, "", E::kNoSchedule), taint("any", "x", E::kNoExecute), false},
      {"an empty key with Equal matches nothing", tol("", Op::kEqual, "", std::nullopt), taint("k", "", E::kNoSchedule), false},
      {"Equal with empty values matches a valueless taint", tol("k", Op::kEqual, "", E::kNoSchedule), taint("k", "", E::kNoSchedule), true},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    CHECK(c.t.tolerates(c.taint) == c.tolerates);
  }
}

TEST_CASE("the first untolerated taint honours the effects asked about", "[taints]") {
  std::vector<Taint> taints = {taint("soft", "", TaintEffect::kPreferNoSchedule), taint("dedicated", "gpu", TaintEffect::kNoSchedule)};
  std::vector<Toleration> none;
  const Taint* t = first_untolerated(none, taints, true, false, true);
  REQUIRE(t);
  CHECK(t->to_string() == "dedicated=gpu:NoSchedule");
  CHECK(first_untolerated(none, taints, false, false, true) == nullptr);
  std::vector<Toleration> gpu = {tol("dedicated", TolerationOp::kEqual, "gpu", std::nullopt)};
  CHECK(first_untolerated(gpu, taints, true, false, true) == nullptr);
  CHECK(parse_taint_effect("NoExecute").value() == TaintEffect::kNoExecute);
  CHECK_FALSE(parse_taint_effect("Sometimes"));
}
