#pragma once
// A simulated cluster without sockets, for tests of kubesim's semantics: requests go straight to
// the Api, and time moves only when the test advances it.

#include "api.hpp"
#include "controllers.hpp"
#include "core/strings.hpp"
#include "scenario.hpp"
#include "yaml_json.hpp"

#include "support/catch.hpp"

#include <memory>

namespace spotshift::kubesim::testing {

class TestCluster {
 public:
  explicit TestCluster(ClusterOptions options = {}, std::string_view scenario = {})
      : clock_(1.0), cluster_(clock_, options), api_(cluster_, ApiOptions{}) {
    if (!scenario.empty()) {
      auto r = load_scenario_text(cluster_, scenario);
      if (!r) FAIL("loading the scenario failed: " << r.error().message);
    }
    controllers_ = std::make_unique<Controllers>(cluster_);
    settle();
  }

  Cluster& cluster() { return cluster_; }
  Api& api() { return api_; }
  SimClock& clock() { return clock_; }

  HttpResponse request(std::string method, std::string path_and_query, std::string body = {}, std::string content_type = "application/json",
                       std::string accept = "application/json") {
    HttpRequest r;
    r.method = std::move(method);
    auto q = path_and_query.find('?');
    r.path = path_and_query.substr(0, q);
    if (q != std::string::npos) {
      r.raw_query = path_and_query.substr(q + 1);
      for (auto part : split(r.raw_query, '&')) {
        auto eq = part.find('=');
        r.query[url_decode(part.substr(0, eq), true).value()] =
            eq == std::string_view::npos ? "" : url_decode(part.substr(eq + 1), true).value();
      }
    }
    r.body = std::move(body);
    r.content_type = std::move(content_type);
    r.accept = std::move(accept);
    auto resp = api_.handle(r);
    settle();
    return resp;
  }
  HttpResponse get(std::string path) { return request("GET", std::move(path)); }
  HttpResponse post(std::string path, std::string body) { return request("POST", std::move(path), std::move(body)); }

  // Creates every object of a YAML or JSON text through the API (POST), failing the test on error.
  void apply(std::string_view yaml) {
    auto docs = parse_yaml_documents(yaml);
    REQUIRE(docs);
    for (auto& d : *docs) {
      std::string api_version(json_string(d, {"apiVersion"}));
      std::string kind(json_string(d, {"kind"}));
      const ResourceType* rt = cluster_.registry().find_kind(api_version, kind);
      REQUIRE(rt);
      std::string ns(namespace_of(d));
      if (rt->namespaced && ns.empty()) ns = "default";
      auto r = cluster_.create(*rt, ns, std::move(d));
      if (!r) FAIL("creating " << kind << " failed: " << r.error().message);
    }
    settle();
  }

  // Runs the controllers until they have nothing more to do at this instant.
  void settle() {
    if (!controllers_) return;
    for (int i = 0; i < 100 && controllers_->run(); ++i) {}
  }
  // Moves simulated time forward and lets the controllers catch up.
  void advance(Duration d) {
    clock_.advance(d);
    settle();
  }

  ObjectPtr object(const ResourceType* rt, std::string_view key) { return cluster_.store().get(*rt, key); }
  ObjectPtr pod(std::string_view key) { return object(cluster_.registry().pods(), key); }
  ObjectPtr node(std::string_view key) { return object(cluster_.registry().nodes(), key); }

 private:
  SimClock clock_;
  Cluster cluster_;
  Api api_;
  std::unique_ptr<Controllers> controllers_;
};

inline Doc parse(const std::string& text) {
  Doc d;
  d.Parse(text.c_str());
  return d;
}

}  // namespace spotshift::kubesim::testing
