#pragma once
// The REST API: maps HTTP requests to Cluster operations and renders the answers (objects,
// lists, Tables, Status errors, discovery and OpenAPI documents). No I/O: the HTTP server hands
// it a parsed request and writes what it returns, streaming watches from a WatchStream.

#include "cluster.hpp"
#include "rbac.hpp"
#include "watch.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace spotshift::kubesim {

struct HttpRequest {
  std::optional<UserInfo> user;  // the authenticated user; empty over plain HTTP and in-process
  // Impersonate-User and Impersonate-Group headers (kubectl --as, --as-group).
  std::optional<std::string> impersonate_user;
  std::vector<std::string> impersonate_groups;
  std::string method;
  std::string path;                          // percent-decoded, without the query
  std::map<std::string, std::string> query;  // decoded; '+' is a space
  std::string raw_query;
  std::string accept;
  std::string content_type;
  std::string user_agent;
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<WatchStream> watch;  // set: stream this watch instead of body
  std::chrono::milliseconds delay{0};  // fault: wait before answering
  bool reset = false;                  // fault: cut the connection in the middle of the body
  int watch_drop_after_events = -1;    // fault: end the watch abruptly after N events
  int watch_drop_after_ms = -1;        // fault: end the watch abruptly after T ms
  // For the audit log.
  std::string verb;
  std::string resource;
};

struct ApiOptions {
  std::chrono::seconds continue_ttl{300};
  std::string server_address = "127.0.0.1:0";  // for /api's serverAddressByClientCIDRs
};

class Api {
 public:
  Api(Cluster& cluster, ApiOptions options);
  HttpResponse handle(const HttpRequest& req);

  // Open watches compare this against the generation they started in: a bump drops them all.
  uint64_t watch_generation() const { return watch_generation_; }
  void drop_watches() { ++watch_generation_; }
  Cluster& cluster() { return cluster_; }

 private:
  struct Target {
    const ResourceType* rt = nullptr;
    std::string ns;
    std::string name;
    std::string subresource;
    bool legacy_watch = false;
  };

  HttpResponse route(const HttpRequest& req);
  HttpResponse resource(const HttpRequest& req, const Target& t);
  HttpResponse list(const HttpRequest& req, const Target& t);
  HttpResponse watch(const HttpRequest& req, const Target& t);
  HttpResponse get(const HttpRequest& req, const Target& t);
  HttpResponse create(const HttpRequest& req, const Target& t);
  HttpResponse update(const HttpRequest& req, const Target& t);
  HttpResponse patch(const HttpRequest& req, const Target& t);
  HttpResponse remove(const HttpRequest& req, const Target& t);
  HttpResponse evict(const HttpRequest& req, const Target& t);
  // SelfSubjectAccessReview, SubjectAccessReview and SelfSubjectReview: answered, not stored.
  HttpResponse review(const HttpRequest& req, const Target& t);
  HttpResponse scale(const HttpRequest& req, const Target& t, std::string_view verb);
  HttpResponse bind(const HttpRequest& req, const Target& t);
  HttpResponse control(const HttpRequest& req);

  // Discovery and OpenAPI (discovery.cpp).
  HttpResponse discovery(const HttpRequest& req);
  std::string api_resource_list(std::string_view group_version) const;
  std::string openapi_index() const;
  std::string openapi_document(std::string_view group_version) const;

  HttpResponse object_response(int status, const Target& t, const StoredObject& obj, const HttpRequest& req) const;
  std::string render(const ResourceType& rt, const StoredObject& obj) const;
  HttpResponse error(const Error& e, const Target& t) const;

  Cluster& cluster_;
  ApiOptions options_;
  uint64_t watch_generation_ = 0;
};

// A Status body for an error, with details as the apiserver fills them.
std::string status_body(const Error& e, const ResourceType* rt, std::string_view name);
std::string success_status(int code);

}  // namespace spotshift::kubesim
