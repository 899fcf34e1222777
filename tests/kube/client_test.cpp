// The client against a scripted transport: exact requests in order, retries swept over every
// attempt, and watch streams split at arbitrary places.

#include "kube/client.hpp"
#include "scripted_transport.hpp"
#include "support/asio_run.hpp"
#include "support/process.hpp"

#include <boost/asio/io_context.hpp>

using namespace spotshift;
using namespace spotshift::kube;
using spotshift::kube::testing::ScriptedTransport;
using spotshift::kube::testing::Step;
using spotshift::testing::run_sync;

namespace {

constexpr const char* kPod =
    R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p1","namespace":"ns","resourceVersion":"5"},"spec":{"nodeName":"n1","containers":[{"name":"c"}]},"status":{"phase":"Running"}})";

std::string node_list(std::vector<std::string> names, std::string rv, std::string cont) {
  std::string items;
  for (const auto& n : names) items += (items.empty() ? "" : ",") + std::string(R"({"metadata":{"name":")") + n + R"("}})";
  std::string meta = R"("resourceVersion":")" + rv + "\"" + (cont.empty() ? "" : R"(,"continue":")" + cont + "\"");
  return R"({"kind":"NodeList","apiVersion":"v1","metadata":{)" + meta + R"(},"items":[)" + items + "]}";
}

struct Fixture {
  boost::asio::io_context ioc;
  std::shared_ptr<ScriptedTransport> transport = std::make_shared<ScriptedTransport>();
  ClientConfig config;
  ClientOptions options;
  std::shared_ptr<CredentialSource> credentials;

  Fixture() {
    config.server = "https://kube.test:6443";
    REQUIRE(parse_server(config));
    options.qps = 0;  // no client-side limit in these tests
    options.max_retry_after = std::chrono::milliseconds(1);
    options.network_retry_delay = std::chrono::milliseconds(1);
    credentials = std::make_shared<StaticCredentials>(Credential{"t0", {}, {}, {}});
  }
  Client client() { return Client(ioc.get_executor(), config, transport, credentials, options); }
};

}  // namespace

TEST_CASE("get decodes the object and a 404 becomes a NotFound error", "[client]") {
  Fixture f;
  f.transport->expect("GET", "/api/v1/namespaces/ns/pods/p1", 200, kPod);
  f.transport->expect(
      "GET", "/api/v1/namespaces/ns/pods/nope", 404,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404})");
  Client c = f.client();
  auto pod = run_sync(f.ioc, c.get<model::Pod>("ns", "p1"));
  REQUIRE(pod);
  CHECK(pod->node_name.view() == "n1");
  CHECK(*f.transport->seen[0].header("Authorization") == "Bearer t0");
  CHECK(*f.transport->seen[0].header("User-Agent") == "spotshift/0.1.0");
  auto missing = run_sync(f.ioc, c.get<model::Pod>("ns", "nope"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().is_not_found());
  CHECK(missing.error().reason == "NotFound");
  CHECK(missing.error().message == "pods \"nope\" not found");
}

TEST_CASE("list follows continue tokens page by page", "[client]") {
  Fixture f;
  f.transport->expect("GET", "/api/v1/nodes?limit=2", 200, node_list({"a", "b"}, "100", "tok1"));
  f.transport->expect("GET", "/api/v1/nodes?limit=2&continue=tok1", 200, node_list({"c", "d"}, "100", "tok2"));
  f.transport->expect("GET", "/api/v1/nodes?limit=2&continue=tok2", 200, node_list({"e"}, "100", ""));
  Client c = f.client();
  ListOptions o;
  o.limit = 2;
  auto list = run_sync(f.ioc, c.list<model::Node>("", o));
  REQUIRE(list);
  CHECK(list->resource_version == "100");
  std::vector<std::string> names;
  for (const auto& n : list->items) names.push_back(n.name());
  CHECK(names == std::vector<std::string>{"a", "b", "c", "d", "e"});
}

TEST_CASE("an expired continue token after items were delivered tells the caller to list again", "[client]") {
  Fixture f;
  f.transport->expect("GET", "/api/v1/nodes?limit=2", 200, node_list({"a", "b"}, "100", "tok1"));
  f.transport->expect(
      "GET", "/api/v1/nodes?limit=2&continue=tok1", 410,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410})");
  Client c = f.client();
  ListOptions o;
  o.limit = 2;
  auto list = run_sync(f.ioc, c.list<model::Node>("", o));
  REQUIRE_FALSE(list);
  CHECK(list.error().is_expired());
}

TEST_CASE("objects that do not decode are skipped and reported, not fatal", "[client]") {
  Fixture f;
  f.transport->expect(
      "GET", "/api/v1/nodes?limit=500", 200,
      R"({"metadata":{"resourceVersion":"3"},"items":[{"metadata":{"name":"ok"}},{"metadata":{"name":"bad"},"spec":{"taints":[{"key":"k","effect":"Sometimes"}]}}]})");
  Client c = f.client();
  auto list = run_sync(f.ioc, c.list<model::Node>(""));
  REQUIRE(list);
  CHECK(list->items.size() == 1);
  REQUIRE(list->skipped.size() == 1);
  CHECK_THAT(list->skipped[0].message, Catch::Contains("decoding node \"bad\": spec.taints[0].effect"));
}

TEST_CASE("a list page is read in one pass, in whatever order its members come", "[client]") {
  Fixture f;
  std::string bad_pod = R"({"metadata":{"name":"bad","namespace":"ns"},"spec":{"priority":"high"}})";
  // metadata after the items, a pod that does not decode between two that do, an unknown member
  f.transport->expect("GET", "/api/v1/pods?limit=500", 200,
                      std::string(R"({"kind":"PodList","items":[)") + kPod + "," + bad_pod + "," + kPod +
                          R"(],"extra":{"a":[1,2]},"metadata":{"continue":"","resourceVersion":"42"}})");
  Client c = f.client();
  auto list = run_sync(f.ioc, c.list<model::Pod>(""));
  REQUIRE(list);
  CHECK(list->resource_version == "42");
  CHECK(list->items.size() == 2);
  REQUIRE(list->skipped.size() == 1);
  CHECK_THAT(list->skipped[0].message, Catch::Contains("\"ns/bad\": spec.priority"));
}

TEST_CASE("a malformed list page fails the whole list, with what was wrong", "[client]") {
  auto page = GENERATE(as<std::pair<std::string, std::string>>{},
                       // cut short after a whole item: the items read so far are not returned
                       std::pair{std::string(R"({"metadata":{"resourceVersion":"1"},"items":[)") + kPod + ",", "invalid JSON at offset"},
                       std::pair{std::string(R"({"metadata":{"resourceVersion":"1"}})"), "list of pods has no items array"},
                       std::pair{std::string(R"({"metadata":{"resourceVersion":"1"},"items":{}})"), "items is not an array"},
                       std::pair{std::string(R"({"items":[],"items":[)") + kPod + "]}", "items is given twice"},
                       std::pair{std::string(R"({"items":[)") + kPod + R"(]} trailing)", "invalid JSON at offset"});
  Fixture f;
  f.transport->expect("GET", "/api/v1/pods?limit=500", 200, page.first);
  Client c = f.client();
  auto list = run_sync(f.ioc, c.list<model::Pod>(""));
  REQUIRE_FALSE(list);
  CHECK_THAT(list.error().message, Catch::Contains(page.second));
}

TEST_CASE("throttled reads are retried after Retry-After, failing the 1st, 2nd, ... attempt", "[client][retry]") {
  for (int failures = 0; failures <= 4; ++failures) {
    DYNAMIC_SECTION("fail " << failures << " times") {
      Fixture f;
      for (int i = 0; i < failures; ++i) f.transport->expect("GET", "/api/v1/nodes/n1", i % 2 ? 503 : 429, "{}", {{"Retry-After", "1"}});
      f.transport->expect("GET", "/api/v1/nodes/n1", 200, R"({"metadata":{"name":"n1"}})");
      Client c = f.client();
      auto node = run_sync(f.ioc, c.get<model::Node>("", "n1"));
      REQUIRE(node);
      CHECK(c.requests_sent() == uint64_t(failures + 1));
    }
  }
}

TEST_CASE("retries stop after the attempt limit and without Retry-After", "[client][retry]") {
  Fixture f;
  f.options.max_attempts = 3;
  for (int i = 0; i < 3; ++i) f.transport->expect("GET", "/api/v1/nodes/n1", 429, "{}", {{"Retry-After", "1"}});
  f.transport->expect(
      "GET", "/api/v1/nodes/n2", 500,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"boom","reason":"InternalError","code":500})");
  f.transport->expect("POST", "/api/v1/namespaces/ns/pods", 503, "{}", {{"Retry-After", "1"}});
  Client c = f.client();
  auto limited = run_sync(f.ioc, c.get<model::Node>("", "n1"));
  REQUIRE_FALSE(limited);
  CHECK(limited.error().code == 429);
  CHECK(limited.error().retry_after_seconds == 1);
  auto no_header = run_sync(f.ioc, c.get<model::Node>("", "n2"));
  REQUIRE_FALSE(no_header);
  CHECK(no_header.error().to_string() == "InternalError (500): boom");
  auto create = run_sync(f.ioc, c.create(Resource::pods(), "ns", "{}"));
  REQUIRE_FALSE(create);  // a create that may have happened is never resent on a 5xx
  CHECK(create.error().code == 503);
}

TEST_CASE("an eviction refused by a budget comes back to the caller, with its causes", "[client][retry]") {
  Fixture f;
  f.transport->expect(
      "POST", "/api/v1/namespaces/ns/pods/p1/eviction", 429,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb needs 2 healthy pods and has 2 currently"}],"retryAfterSeconds":10},"code":429})",
      {{"Retry-After", "10"}});
  f.transport->expect("POST", "/api/v1/namespaces/ns/pods/p2/eviction", 201,
                      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})");
  Client c = f.client();
  DeleteOptions o;
  o.grace_period_seconds = 30;
  auto refused = run_sync(f.ioc, c.evict("ns", "p1", o));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().is_too_many_requests());
  CHECK(refused.error().retry_after_seconds == 10);
  REQUIRE(refused.error().causes.size() == 1);
  CHECK(refused.error().causes[0].reason == "DisruptionBudget");
  CHECK(run_sync(f.ioc, c.evict("ns", "p2", o)));
  CHECK(f.transport->seen[1].body.find(R"("gracePeriodSeconds":30)") != std::string::npos);
}

TEST_CASE("connection failures are retried for idempotent requests only", "[client][retry]") {
  for (int failures = 0; failures <= 3; ++failures) {
    DYNAMIC_SECTION("GET failing " << failures << " times") {
      Fixture f;
      for (int i = 0; i < failures; ++i) {
        Step s;
        s.method = "GET";
        s.target = "/api/v1/nodes/n1";
        s.failure = i % 2 ? Error::timeout("read timed out") : Error::network("connection reset by peer");
        f.transport->expect(std::move(s));
      }
      f.transport->expect("GET", "/api/v1/nodes/n1", 200, R"({"metadata":{"name":"n1"}})");
      Client c = f.client();
      CHECK(run_sync(f.ioc, c.get<model::Node>("", "n1")));
    }
  }
  Fixture f;
  for (int i = 0; i < 4; ++i) {
    Step s;
    s.method = "GET";
    s.target = "/api/v1/nodes/n1";
    s.failure = Error::network("connection refused");
    f.transport->expect(std::move(s));
  }
  Step post;
  post.method = "POST";
  post.target = "/api/v1/namespaces/ns/pods";
  post.failure = Error::network("connection reset by peer");
  f.transport->expect(std::move(post));
  Client c = f.client();
  auto gave_up = run_sync(f.ioc, c.get<model::Node>("", "n1"));
  REQUIRE_FALSE(gave_up);
  CHECK(gave_up.error().message == "GET /api/v1/nodes/n1: connection refused");
  auto create = run_sync(f.ioc, c.create(Resource::pods(), "ns", "{}"));
  REQUIRE_FALSE(create);
  CHECK(create.error().kind == ErrorKind::kNetwork);
}

TEST_CASE("a 401 re-reads the token and retries once", "[client]") {
  spotshift::testing::TempDir dir;
  dir.write("token", "old");
  Fixture f;
  f.credentials = std::make_shared<TokenFileCredentials>(dir.file("token"), SystemClock::instance());
  f.transport->expect("GET", "/api/v1/nodes/n1", 200, R"({"metadata":{"name":"n1"}})");
  Step rotated;
  rotated.method = "GET";
  rotated.target = "/api/v1/nodes/n1";
  rotated.status = 401;
  rotated.body =
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})";
  f.transport->expect(rotated);
  f.transport->expect("GET", "/api/v1/nodes/n1", 200, R"({"metadata":{"name":"n1"}})");
  f.transport->expect(rotated);
  f.transport->expect(rotated);
  Client c = f.client();
  CHECK(run_sync(f.ioc, c.get<model::Node>("", "n1")));
  dir.write("token", "new");
  CHECK(run_sync(f.ioc, c.get<model::Node>("", "n1")));
  CHECK(*f.transport->seen[1].header("Authorization") == "Bearer old");
  CHECK(*f.transport->seen[2].header("Authorization") == "Bearer new");
  auto denied = run_sync(f.ioc, c.get<model::Node>("", "n1"));
  REQUIRE_FALSE(denied);  // still 401 after the refresh: give up
  CHECK(denied.error().code == 401);
}

TEST_CASE("tokens are not sent over plain HTTP, as kubectl does", "[client]") {
  Fixture f;
  f.config.server = "http://kube.test:8080";
  REQUIRE(parse_server(f.config));
  f.transport->expect("GET", "/api/v1/nodes/n1", 200, R"({"metadata":{"name":"n1"}})");
  Client c = f.client();
  CHECK(run_sync(f.ioc, c.get<model::Node>("", "n1")));
  CHECK(f.transport->seen[0].header("Authorization") == nullptr);
}

TEST_CASE("a client certificate from an exec plugin goes to the transport", "[client]") {
  Fixture f;
  f.credentials = std::make_shared<StaticCredentials>(Credential{"", "CERT", "KEY", {}});
  f.transport->expect("GET", "/api/v1/nodes/n1", 200, R"({"metadata":{"name":"n1"}})");
  Client c = f.client();
  CHECK(run_sync(f.ioc, c.get<model::Node>("", "n1")));
  CHECK(f.transport->certificate == "CERT");
  CHECK(f.transport->seen[0].header("Authorization") == nullptr);
}

TEST_CASE("non-Status error bodies still give a clear error", "[client]") {
  HttpResponse r{502, {{"retry-after", "3"}}, "<html>Bad Gateway</html>"};
  Error e = error_from_response(r);
  CHECK(e.code == 502);
  CHECK(e.message == "the server answered 502: <html>Bad Gateway</html>");
  CHECK(e.retry_after_seconds == 3);
}

TEST_CASE("watch events are framed by newlines, however the chunks fall", "[client][watch]") {
  std::string events = std::string(R"({"type":"ADDED","object":)") + kPod + "}\n" +
                       R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12"}}})" + "\n" +
                       R"({"type":"MODIFIED","object":{"metadata":{"name":"bad"},"spec":{"priority":"high"}}})" + "\n" +
                       R"({"type":"DELETED","object":)" + kPod + "}\n";
  for (size_t cut : {size_t(1), size_t(7), size_t(64), events.size()}) {
    DYNAMIC_SECTION("chunks of " << cut << " bytes") {
      Fixture f;
      Step s;
      s.method = "GET";
      s.target = "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5&allowWatchBookmarks=true&timeoutSeconds=300";
      for (size_t i = 0; i < events.size(); i += cut) s.chunks.push_back(events.substr(i, cut));
      f.transport->expect(std::move(s));
      Client c = f.client();
      WatchOptions o;
      o.resource_version = "5";
      o.timeout_seconds = 300;
      auto w = run_sync(f.ioc, c.watch<model::Pod>("ns", o));
      REQUIRE(w);
      std::vector<std::string> seen;
      for (;;) {
        auto e = run_sync(f.ioc, w->next());
        REQUIRE(e);
        if (!*e) break;
        std::string line(to_string((*e)->type));
        if ((*e)->object) line += " " + (*e)->object->name();
        if ((*e)->decode_error) line += " undecodable";
        line += " rv=" + (*e)->resource_version;
        seen.push_back(line);
      }
      CHECK(seen == std::vector<std::string>{"ADDED p1 rv=5", "BOOKMARK rv=12", "MODIFIED undecodable rv=", "DELETED p1 rv=5"});
    }
  }
}

TEST_CASE("a watch ERROR event or a broken stream is an error; a 410 is Expired", "[client][watch]") {
  Fixture f;
  Step expired;
  expired.method = "GET";
  expired.target = "/api/v1/nodes?watch=true&resourceVersion=1&allowWatchBookmarks=true";
  expired.chunks = {
      R"x({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (50)","reason":"Expired","code":410}})x"
      "\n"};
  f.transport->expect(expired);
  Step broken = expired;
  broken.chunks = {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                   "\n"};
  broken.stream_failure = Error::network("connection reset by peer");
  f.transport->expect(broken);
  Step refused = expired;
  refused.chunks.clear();
  refused.status = 410;
  refused.body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Gone","code":410})";
  f.transport->expect(refused);
  Client c = f.client();
  WatchOptions o;
  o.resource_version = "1";
  auto w = run_sync(f.ioc, c.watch<model::Node>("", o));
  REQUIRE(w);
  auto e = run_sync(f.ioc, w->next());
  REQUIRE_FALSE(e);
  CHECK(e.error().is_expired());
  CHECK(e.error().message == "too old resource version: 1 (50)");
  auto w2 = run_sync(f.ioc, c.watch<model::Node>("", o));
  REQUIRE(w2);
  CHECK(run_sync(f.ioc, w2->next()));
  auto broke = run_sync(f.ioc, w2->next());
  REQUIRE_FALSE(broke);
  CHECK(broke.error().kind == ErrorKind::kNetwork);
  auto gone = run_sync(f.ioc, c.watch<model::Node>("", o));
  REQUIRE_FALSE(gone);
  CHECK(gone.error().is_expired());
}

TEST_CASE("the client-side rate limit spaces requests beyond the burst", "[client]") {
  ManualClock clock;
  TokenBucket bucket(10, 2);
  Time t = clock.now();
  CHECK(bucket.reserve(t) == Duration::zero());
  CHECK(bucket.reserve(t) == Duration::zero());
  CHECK(bucket.reserve(t) == std::chrono::milliseconds(100));
  CHECK(bucket.reserve(t) == std::chrono::milliseconds(200));
  CHECK(bucket.reserve(t + std::chrono::seconds(1)) == Duration::zero());
  TokenBucket unlimited(0, 1);
  for (int i = 0; i < 100; ++i) CHECK(unlimited.reserve(t) == Duration::zero());
}

TEST_CASE("a sibling client shares connections and credentials but has a rate limit of its own", "[client]") {
  Fixture f;
  f.options.qps = 1;  // a token a second beyond the burst
  f.options.burst = 1;
  std::vector<Duration> parent_waits, sibling_waits;
  f.options.on_request = [&](Duration wait) { parent_waits.push_back(wait); };
  for (int i = 0; i < 3; ++i) f.transport->expect("GET", "/api/v1/namespaces/ns/pods/p1", 200, kPod);
  auto parent = std::make_shared<Client>(f.ioc.get_executor(), f.config, f.transport, f.credentials, f.options);
  ClientOptions own = f.options;
  own.user_agent = "events/1";
  own.on_request = [&](Duration wait) { sibling_waits.push_back(wait); };
  auto events = parent->sibling(own);

  // The parent spends its burst; the sibling's request does not wait for the parent's next
  // token, and the parent's next request does.
  REQUIRE(run_sync(f.ioc, parent->get<model::Pod>("ns", "p1")));
  REQUIRE(run_sync(f.ioc, events->get<model::Pod>("ns", "p1")));
  REQUIRE(run_sync(f.ioc, parent->get<model::Pod>("ns", "p1")));
  REQUIRE(parent_waits.size() == 2);
  REQUIRE(sibling_waits.size() == 1);
  CHECK(parent_waits[0] == Duration::zero());
  CHECK(sibling_waits[0] == Duration::zero());
  CHECK(parent_waits[1] > std::chrono::milliseconds(500));
  REQUIRE(f.transport->seen.size() == 3);
  CHECK(*f.transport->seen[1].header("Authorization") == "Bearer t0");
  CHECK(*f.transport->seen[1].header("User-Agent") == "events/1");
  CHECK(*f.transport->seen[2].header("User-Agent") == "spotshift/0.1.0");
}
