// Steering: the book of steers the evictor writes and the webhook reads, and the webhook's
// answers to AdmissionReviews (the JSON patch for each shape of pod).

#include "drain/steering.hpp"
#include "core/strings.hpp"
#include "model/json.hpp"
#include "support/catch.hpp"

#include <fmt/format.h>

using namespace spotshift;
using namespace spotshift::drain;
using namespace std::chrono_literals;

namespace {

const Time kNow = Time{} + 1000h;

Steer steer(std::string pod, std::string target, std::string uid = "rs-uid", std::string kind = "ReplicaSet", std::string node = "od-1") {
  return Steer{"default", std::move(uid), std::move(kind), std::move(pod), std::move(target), std::move(node), "pool", kNow + 60s};
}

// An AdmissionReview for creating `pod` (its JSON) in namespace default.
std::string review(const std::string& pod, std::string_view operation = "CREATE") {
  return fmt::format(R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"req-1",)"
                     R"("kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},)"
                     R"("namespace":"default","operation":"{}","object":{}}}}})",
                     operation, pod);
}

std::string pod(std::string_view spec = "{}", std::string_view extra_meta = "", std::string_view owner_uid = "rs-uid") {
  return fmt::format(R"({{"metadata":{{"generateName":"web-",{}"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet",)"
                     R"("name":"web","uid":"{}","controller":true}}]}},"spec":{}}})",
                     extra_meta, owner_uid, spec);
}

struct Answer {
  model::JsonDocument doc;
  model::JsonDocument patch;
  bool patched = false;
};

Answer decode(const std::string& body) {
  Answer a;
  REQUIRE(model::parse_json(body, a.doc));
  CHECK(model::json_string(a.doc, {"apiVersion"}) == "admission.k8s.io/v1");
  CHECK(model::json_string(a.doc, {"response", "uid"}) == "req-1");
  CHECK(model::json_bool(a.doc, {"response", "allowed"}));
  auto patch = model::json_string(a.doc, {"response", "patch"});
  if (!patch.empty()) {
    CHECK(model::json_string(a.doc, {"response", "patchType"}) == "JSONPatch");
    auto text = base64_decode(patch);
    REQUIRE(text);
    REQUIRE(model::parse_json(*text, a.patch));
    a.patched = true;
  }
  return a;
}

}  // namespace

TEST_CASE("the steering book hands out each controller's steers once, oldest first", "[steering]") {
  SteeringBook book;
  book.add(steer("web-a", "spot-1"));
  book.add(steer("web-b", "spot-2"));
  book.add(steer("db-0", "spot-3", "sts-uid", "StatefulSet"));
  CHECK(book.size() == 3);
  CHECK_FALSE(book.take("other", "rs-uid", "ReplicaSet", "", kNow));  // another namespace
  CHECK_FALSE(book.take("default", "someone-else", "ReplicaSet", "", kNow));
  CHECK(book.take("default", "rs-uid", "ReplicaSet", "", kNow)->target == "spot-1");
  CHECK(book.take("default", "rs-uid", "ReplicaSet", "web-x", kNow)->target == "spot-2");
  CHECK_FALSE(book.take("default", "rs-uid", "ReplicaSet", "", kNow));
  // A StatefulSet's replacement has the evicted pod's name; another of its pods gets nothing.
  CHECK_FALSE(book.take("default", "sts-uid", "StatefulSet", "db-1", kNow));
  CHECK(book.take("default", "sts-uid", "StatefulSet", "db-0", kNow)->target == "spot-3");
  CHECK(book.size() == 0);
}

TEST_CASE("steers expire, and go when their eviction does not happen or their drain ends", "[steering]") {
  SteeringBook book;
  book.add(steer("web-a", "spot-1"));
  CHECK_FALSE(book.take("default", "rs-uid", "ReplicaSet", "", kNow + 60s));
  CHECK(book.size() == 0);

  book.add(steer("web-a", "spot-1"));
  book.add(steer("web-b", "spot-2"));
  book.withdraw("default", "web-a");
  CHECK(book.take("default", "rs-uid", "ReplicaSet", "", kNow)->pod_name == "web-b");

  book.add(steer("web-a", "spot-1", "rs-uid", "ReplicaSet", "od-1"));
  book.add(steer("api-a", "spot-1", "api-uid", "ReplicaSet", "od-2"));
  book.drop_drain("od-1");
  CHECK(book.size() == 1);
  CHECK_FALSE(book.take("default", "rs-uid", "ReplicaSet", "", kNow));
  CHECK(book.take("default", "api-uid", "ReplicaSet", "", kNow));
}

TEST_CASE("the webhook adds a preferred node affinity for the planned node, whatever affinity the pod has", "[steering]") {
  const std::string term = R"({"weight":100,"preference":{"matchFields":[{"key":"metadata.name","operator":"In","values":["spot-2"]}]}})";
  struct Case {
    std::string spec, meta, path, value;
  };
  const Case cases[] = {
      {"{}", "", "/spec/affinity", fmt::format(R"({{"nodeAffinity":{{"preferredDuringSchedulingIgnoredDuringExecution":[{}]}}}})", term)},
      {R"({"affinity":null})", "", "/spec/affinity",
       fmt::format(R"({{"nodeAffinity":{{"preferredDuringSchedulingIgnoredDuringExecution":[{}]}}}})", term)},
      {R"({"affinity":{"podAntiAffinity":{}}})", "", "/spec/affinity/nodeAffinity",
       fmt::format(R"({{"preferredDuringSchedulingIgnoredDuringExecution":[{}]}})", term)},
      {R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}})", "",
       "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution", fmt::format("[{}]", term)},
      {R"({"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{}}]}}})",
       R"("annotations":{"a":"b"},)", "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/-", term},
  };
  for (const auto& c : cases) {
    CAPTURE(c.spec);
    SteeringBook book;
    book.add(steer("web-a", "spot-2"));
    auto answer = answer_admission(review(pod(c.spec, c.meta)), book, kNow);
    REQUIRE(answer);
    REQUIRE(answer->steer);
    CHECK(answer->steer->pod_name == "web-a");
    CHECK(answer->pod == "default/web-");
    Answer a = decode(answer->body);
    REQUIRE(a.patched);
    REQUIRE(a.patch.IsArray());
    REQUIRE(a.patch.Size() == 2);
    CHECK(model::json_string(a.patch[0], {"op"}) == "add");
    CHECK(model::json_string(a.patch[0], {"path"}) == c.path);
    CHECK(model::json_text(a.patch[0]["value"]) == c.value);
    // The annotation says where the pod was steered.
    if (c.meta.empty()) {
      CHECK(model::json_string(a.patch[1], {"path"}) == "/metadata/annotations");
      CHECK(model::json_string(a.patch[1], {"value", "spotshift.io/steered-to"}) == "spot-2");
    } else {
      CHECK(model::json_string(a.patch[1], {"path"}) == "/metadata/annotations/spotshift.io~1steered-to");
      CHECK(model::json_string(a.patch[1], {"value"}) == "spot-2");
    }
    CHECK(book.size() == 0);
  }
}

TEST_CASE("the webhook lets every other pod through untouched", "[steering]") {
  SteeringBook book;
  book.add(steer("web-a", "spot-2"));
  SECTION("another controller's pod") {
    auto answer = answer_admission(review(pod("{}", "", "other-uid")), book, kNow);
    REQUIRE(answer);
    CHECK_FALSE(answer->steer);
    CHECK_FALSE(decode(answer->body).patched);
    CHECK(book.size() == 1);
  }
  SECTION("a pod without a controller") {
    auto answer = answer_admission(review(R"({"metadata":{"name":"bare"},"spec":{}})"), book, kNow);
    REQUIRE(answer);
    CHECK_FALSE(decode(answer->body).patched);
    CHECK(book.size() == 1);
  }
  SECTION("an update") {
    auto answer = answer_admission(review(pod(), "UPDATE"), book, kNow);
    REQUIRE(answer);
    CHECK_FALSE(decode(answer->body).patched);
    CHECK(book.size() == 1);
  }
  SECTION("a dry run: patched, the steer kept for the real create") {
    std::string dry = review(pod());
    dry.replace(dry.find(R"("operation")"), 0, R"("dryRun":true,)");
    auto answer = answer_admission(dry, book, kNow);
    REQUIRE(answer);
    CHECK(decode(answer->body).patched);
    CHECK(book.size() == 1);
    CHECK(decode(answer_admission(review(pod()), book, kNow)->body).patched);
    CHECK(book.size() == 0);
  }
  SECTION("no drain: an empty book") {
    SteeringBook empty;
    auto answer = answer_admission(review(pod()), empty, kNow);
    REQUIRE(answer);
    CHECK_FALSE(decode(answer->body).patched);
  }
}

TEST_CASE("the webhook refuses what is not an admission.k8s.io/v1 AdmissionReview", "[steering]") {
  SteeringBook book;
  CHECK(answer_admission("not json", book, kNow).error().message.find("not JSON") != std::string::npos);
  CHECK(answer_admission(R"({"kind":"Pod"})", book, kNow).error().message == "the request body is not an AdmissionReview");
  CHECK(answer_admission(R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}})", book, kNow)
            .error()
            .message.find("only admission.k8s.io/v1") != std::string::npos);
  CHECK(answer_admission(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}})", book, kNow).error().message ==
        "the AdmissionReview's request has no uid");
}
