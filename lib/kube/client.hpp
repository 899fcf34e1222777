#pragma once
// The Kubernetes API client: verbs as coroutines returning Result. It limits its request rate,
// authenticates (refreshing credentials and retrying once after a 401), retries throttled and
// failed requests where that is safe (honouring Retry-After, a bounded number of times), and
// turns every non-2xx answer into an Error with the Status's code, reason, message, causes and
// retryAfterSeconds.

#include "core/clock.hpp"
#include "core/token_bucket.hpp"
#include "kube/credentials.hpp"
#include "kube/request.hpp"
#include "kube/transport.hpp"
#include "model/json.hpp"
#include "model/lease.hpp"
#include "model/node.hpp"
#include "model/pdb.hpp"
#include "model/pod.hpp"
#include "model/volume.hpp"

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spotshift::kube {

struct ClientOptions {
  double qps = 20;  // client-side rate limit; 0 disables it
  int burst = 40;
  int max_attempts = 10;                                // for 429/5xx answers carrying Retry-After
  Duration max_retry_after = std::chrono::seconds(60);  // longer Retry-After values are capped
  int network_retries = 3;                              // idempotent requests after connection errors and timeouts
  Duration network_retry_delay = std::chrono::milliseconds(200);
  Duration request_timeout = std::chrono::seconds(30);
  Duration watch_idle_margin = std::chrono::seconds(5);  // watch idle deadline: timeoutSeconds + this
  std::string user_agent = "spotshift/0.1.0";
  // Told each time a request (or a retry of one) passes the client-side rate limit, with how long
  // the limit held it back: for metrics.
  std::function<void(Duration rate_limit_wait)> on_request;
  // Told the HTTP status code of each answer (each retry's too), 0 when the request got none (a
  // connection or TLS failure, a timeout): for metrics.
  std::function<void(int code)> on_response;
};

// The apiserver's error for a non-2xx response (a Status body when there is one).
Error error_from_response(const HttpResponse& r);

// What a list page says of itself; its items went to the caller as they were read.
struct ListPageMeta {
  std::string resource_version;
  std::string continue_token;
};

template <class T>
struct ObjectList {
  std::vector<T> items;
  std::string resource_version;
  std::vector<Error> skipped;  // objects that did not decode (logged by callers, never fatal)
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };
std::string_view to_string(WatchEventType t);

struct RawWatchEvent {
  WatchEventType type;
  std::string line;  // the whole event
  size_t object_begin = 0, object_size = 0;
  std::string resource_version;
  // The text of the event's object.
  std::string_view object() const { return std::string_view(line).substr(object_begin, object_size); }
};

// A watch response: newline-delimited JSON events split however the chunks fall.
class RawWatch {
 public:
  RawWatch(std::unique_ptr<BodyStream> body, Duration idle) : body_(std::move(body)), idle_(idle) {}
  RawWatch(RawWatch&&) = default;
  RawWatch& operator=(RawWatch&&) = default;
  // The next event; nothing once the server ended the stream cleanly. An ERROR event comes back
  // as its Status error (410 Expired means: relist).
  asio::awaitable<Result<std::optional<RawWatchEvent>>> next();
  void close();

 private:
  std::unique_ptr<BodyStream> body_;
  Duration idle_;
  std::string buffer_;
  size_t scanned_ = 0;
};

// Maps a model type to its resource and decoder: read(r) decodes the object r is at, read whole.
template <class T>
struct ResourceTraits;
template <>
struct ResourceTraits<model::Pod> {
  static const Resource& resource() { return Resource::pods(); }
  static Result<model::Pod> read(model::JsonReader& r) { return model::decode_pod(r); }
  static Result<void> read_into(model::JsonReader& r, model::Pod& into) { return model::decode_pod(r, into); }
};
template <>
struct ResourceTraits<model::Node> {
  static const Resource& resource() { return Resource::nodes(); }
  static Result<model::Node> read(model::JsonReader& r) { return model::decode_node(r); }
};
template <>
struct ResourceTraits<model::PodDisruptionBudget> {
  static const Resource& resource() { return Resource::pod_disruption_budgets(); }
  static Result<model::PodDisruptionBudget> read(model::JsonReader& r) { return model::decode_pdb(r); }
};
template <>
struct ResourceTraits<model::Lease> {
  static const Resource& resource() { return Resource::leases(); }
  static Result<model::Lease> read(model::JsonReader& r) { return model::decode_lease(r); }
};

template <>
struct ResourceTraits<model::PersistentVolumeClaim> {
  static const Resource& resource() { return Resource::persistent_volume_claims(); }
  static Result<model::PersistentVolumeClaim> read(model::JsonReader& r) { return model::decode_pvc(r); }
};
template <>
struct ResourceTraits<model::PersistentVolume> {
  static const Resource& resource() { return Resource::persistent_volumes(); }
  static Result<model::PersistentVolume> read(model::JsonReader& r) { return model::decode_pv(r); }
};

// Decodes the next value of r as a T, in one pass.
template <class T>
Result<T> read_object(model::JsonReader& r) {
  return ResourceTraits<T>::read(r);
}

// The same into `into`, a default-constructed T: pods are decoded in place, where they are kept.
template <class T>
Result<void> read_object_into(model::JsonReader& r, T& into) {
  if constexpr (requires { ResourceTraits<T>::read_into(r, into); }) {
    return ResourceTraits<T>::read_into(r, into);
  } else {
    auto decoded = read_object<T>(r);
    if (!decoded) return decoded.error();
    into = std::move(*decoded);
    return Result<void>{};
  }
}

// The one object of a response body, as a T.
template <class T>
Result<T> decode_body(std::string_view body) {
  return model::decode_whole(ResourceTraits<T>::resource().kind, body, [](model::JsonReader& r) { return read_object<T>(r); });
}

template <class T>
struct WatchEvent {
  WatchEventType type;
  std::optional<T> object;  // absent for bookmarks and for objects that did not decode
  std::string resource_version;
  std::optional<Error> decode_error;
};

template <class T>
class Watch {
 public:
  explicit Watch(RawWatch raw) : raw_(std::move(raw)) {}
  asio::awaitable<Result<std::optional<WatchEvent<T>>>> next() {
    auto e = co_await raw_.next();
    if (!e) co_return e.error();
    if (!*e) co_return std::nullopt;
    WatchEvent<T> out{(*e)->type, std::nullopt, (*e)->resource_version, std::nullopt};
    if (out.type != WatchEventType::kBookmark) {
      model::JsonReader r((*e)->object());
      auto decoded = read_object<T>(r);
      if (decoded) out.object = std::move(*decoded);
      else out.decode_error = decoded.error();
    }
    co_return out;
  }
  void close() { raw_.close(); }

 private:
  RawWatch raw_;
};

class Client {
 public:
  Client(asio::any_io_executor executor, ClientConfig config, std::shared_ptr<Transport> transport,
         std::shared_ptr<CredentialSource> credentials, ClientOptions options = {}, const Clock& clock = SystemClock::instance());

  // A client for a loaded configuration, over the real HTTP transport.
  static Result<std::shared_ptr<Client>> create(asio::any_io_executor executor, const ClientConfig& config, ClientOptions options = {});

  // A client over the same connections and credentials with options, and so a rate limit, of its
  // own: the event recorder's, so that a burst of events never spends the budget that status
  // writes and evictions need, and leader election's, so that nothing holds a lease renewal back
  // (controller-runtime gives both clients of their own for the same reasons).
  std::shared_ptr<Client> sibling(ClientOptions options) const;

  const ClientConfig& config() const { return config_; }
  asio::any_io_executor executor() const { return executor_; }

  // Sends req with rate limiting, authentication and retries; non-2xx answers are errors.
  asio::awaitable<Result<HttpResponse>> execute(Request req);

  // The verbs on one object give back the response body, the object as JSON text: decode it with
  // a model decoder (the typed verbs below do), or parse it where a patch is built from it.
  asio::awaitable<Result<std::string>> get(const Resource& r, std::string_view ns, std::string_view name,
                                           std::string_view subresource = {});
  // One list page, read in one pass: each item goes to on_item as a reader at the item, which
  // on_item reads whole. When the page turns out malformed after some items, the error comes
  // after them: the caller drops what it got.
  asio::awaitable<Result<ListPageMeta>> list_page(const Resource& r, std::string_view ns, ListOptions o,
                                                  const std::function<void(model::JsonReader&)>& on_item);
  // Every page, following continue tokens (and starting over once if a token expires). Items go
  // to on_item one page at a time, as list_page gives them; the whole list is never held at
  // once. Returns the list's resourceVersion. On an error, items already delivered are to be
  // dropped: they may belong to a malformed page or an expired snapshot.
  asio::awaitable<Result<std::string>> list_each(const Resource& r, std::string_view ns, ListOptions o,
                                                 std::function<void(model::JsonReader&)> on_item);
  // Options are taken by value and have no default arguments: GCC 12 destroys a default-argument
  // temporary of a coroutine call twice. The overloads without options forward a fresh value.
  asio::awaitable<Result<std::string>> create(const Resource& r, std::string_view ns, std::string body, WriteOptions o);
  asio::awaitable<Result<std::string>> create(const Resource& r, std::string_view ns, std::string body) {
    return create(r, ns, std::move(body), WriteOptions{});
  }
  asio::awaitable<Result<std::string>> update(const Resource& r, std::string_view ns, std::string_view name, std::string body,
                                              WriteOptions o);
  asio::awaitable<Result<std::string>> update(const Resource& r, std::string_view ns, std::string_view name, std::string body) {
    return update(r, ns, name, std::move(body), WriteOptions{});
  }
  asio::awaitable<Result<std::string>> update_status(const Resource& r, std::string_view ns, std::string_view name, std::string body,
                                                     WriteOptions o);
  asio::awaitable<Result<std::string>> update_status(const Resource& r, std::string_view ns, std::string_view name, std::string body) {
    return update_status(r, ns, name, std::move(body), WriteOptions{});
  }
  asio::awaitable<Result<std::string>> patch(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                                             std::string body, WriteOptions o);
  asio::awaitable<Result<std::string>> patch(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                                             std::string body) {
    return patch(r, ns, name, type, std::move(body), WriteOptions{});
  }
  asio::awaitable<Result<std::string>> patch_status(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                                                    std::string body, WriteOptions o);
  asio::awaitable<Result<std::string>> patch_status(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                                                    std::string body) {
    return patch_status(r, ns, name, type, std::move(body), WriteOptions{});
  }
  asio::awaitable<Result<void>> remove(const Resource& r, std::string_view ns, std::string_view name, DeleteOptions o);
  asio::awaitable<Result<void>> remove(const Resource& r, std::string_view ns, std::string_view name) {
    return remove(r, ns, name, DeleteOptions{});
  }
  // policy/v1 Eviction; a refusal by a PodDisruptionBudget is a 429 error for the caller to
  // handle (it is never retried here).
  asio::awaitable<Result<void>> evict(std::string_view ns, std::string_view name, DeleteOptions o);
  asio::awaitable<Result<RawWatch>> watch(const Resource& r, std::string_view ns, WatchOptions o);

  // Typed verbs for the model's kinds.
  template <class T>
  asio::awaitable<Result<T>> get(std::string_view ns, std::string_view name) {
    // Straight to the decoder, which checks the grammar as it reads (the untyped get scans first).
    auto r = co_await execute(get_request(ResourceTraits<T>::resource(), ns, name));
    if (!r) co_return r.error();
    co_return decode_body<T>(r->body);
  }
  template <class T>
  asio::awaitable<Result<ObjectList<T>>> list(std::string_view ns) {
    return list<T>(ns, ListOptions{});
  }
  template <class T>
  asio::awaitable<Result<ObjectList<T>>> list(std::string_view ns, ListOptions o) {
    ObjectList<T> out;
    auto rv = co_await list_each(ResourceTraits<T>::resource(), ns, std::move(o), [&](model::JsonReader& item) {
      if (auto decoded = read_object_into<T>(item, out.items.emplace_back()); !decoded) {
        out.items.pop_back();
        out.skipped.push_back(decoded.error());
      }
    });
    if (!rv) co_return rv.error();
    out.resource_version = std::move(*rv);
    co_return out;
  }
  template <class T>
  asio::awaitable<Result<Watch<T>>> watch(std::string_view ns, WatchOptions o) {
    auto raw = co_await watch(ResourceTraits<T>::resource(), ns, o);
    if (!raw) co_return raw.error();
    co_return Watch<T>(std::move(*raw));
  }

  // How many requests were sent, including retries (for tests and metrics).
  uint64_t requests_sent() const { return requests_sent_; }

 private:
  asio::awaitable<Result<Credential>> credential(bool refresh);
  asio::awaitable<void> sleep(Duration d);
  asio::awaitable<void> throttle();
  asio::awaitable<Result<std::string>> object_body(Request req);

  asio::any_io_executor executor_;
  ClientConfig config_;
  std::shared_ptr<Transport> transport_;
  std::shared_ptr<CredentialSource> credentials_;
  ClientOptions options_;
  const Clock& clock_;
  TokenBucket limiter_;
  std::optional<Credential> applied_certificate_;
  uint64_t requests_sent_ = 0;
};

}  // namespace spotshift::kube
