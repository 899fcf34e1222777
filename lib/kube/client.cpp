#include "kube/client.hpp"

#include "core/log.hpp"
#include "core/strings.hpp"

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace spotshift::kube {

namespace {

const log::Logger logger("kube");

asio::thread_pool& blocking_pool() {
  // Exec plugins run here so they never block an io_context.
  static asio::thread_pool* pool = new asio::thread_pool(1);
  return *pool;
}

// A Status object (metav1.Status) as an error; nothing when text is not one.
std::optional<Error> status_error(std::string_view text, int http_code) {
  model::JsonDecoder d("Status");
  model::JsonReader r(text);
  std::string_view kind;
  int64_t code = http_code;
  std::string reason, message;
  std::vector<StatusCause> causes;
  std::optional<int64_t> retry_after;
  d.members(r, [&](std::string_view key) {
    if (key == "kind") kind = d.string(r);
    else if (key == "code") code = d.integer(r, code);
    else if (key == "reason") reason = d.string(r);
    else if (key == "message") message = d.string(r);
    else if (key == "details")
      d.members(r, [&](std::string_view k) {
        if (k == "retryAfterSeconds") retry_after = d.optional_integer(r);
        else if (k == "causes")
          d.elements(r, [&] {
            StatusCause& c = causes.emplace_back();
            d.members(r, [&](std::string_view f) {
              if (f == "reason") c.reason = d.string(r);
              else if (f == "field") c.field = d.string(r);
              else if (f == "message") c.message = d.string(r);
              else return false;
              return true;
            });
          });
        else return false;
        return true;
      });
    else return false;
    return true;
  });
  if (!d.ok() || !r.finish() || kind != "Status") return std::nullopt;
  Error e = Error::api(static_cast<int>(code), std::move(reason), std::move(message));
  e.causes = std::move(causes);
  if (retry_after) e.retry_after_seconds = static_cast<int>(*retry_after);
  if (e.message.empty()) e.message = fmt::format("the server answered {}", code);
  return e;
}

}  // namespace

std::string_view to_string(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
  }
  return "?";
}

Error error_from_response(const HttpResponse& r) {
  Error e;
  if (auto status = status_error(r.body, r.status)) {
    e = std::move(*status);
  } else {
    std::string snippet = r.body.substr(0, 200);
    e = Error::api(
        r.status, "",
        snippet.empty() ? fmt::format("the server answered {}", r.status) : fmt::format("the server answered {}: {}", r.status, snippet));
  }
  if (const std::string* ra = r.header("Retry-After")) {
    if (auto n = parse_int(*ra); n && *n >= 0) e.retry_after_seconds = static_cast<int>(*n);
  }
  return e;
}

Client::Client(asio::any_io_executor executor, ClientConfig config, std::shared_ptr<Transport> transport,
               std::shared_ptr<CredentialSource> credentials, ClientOptions options, const Clock& clock)
    : executor_(std::move(executor)),
      config_(std::move(config)),
      transport_(std::move(transport)),
      credentials_(std::move(credentials)),
      options_(std::move(options)),
      clock_(clock),
      limiter_(options_.qps, options_.burst) {}

Result<std::shared_ptr<Client>> Client::create(asio::any_io_executor executor, const ClientConfig& config, ClientOptions options) {
  auto transport = make_http_transport(executor, config);
  if (!transport) return transport.error();
  auto creds = make_credentials(config, SystemClock::instance());
  return std::make_shared<Client>(std::move(executor), config, std::move(*transport), std::move(creds), std::move(options));
}

std::shared_ptr<Client> Client::sibling(ClientOptions options) const {
  return std::make_shared<Client>(executor_, config_, transport_, credentials_, std::move(options), clock_);
}

// Waits for the rate limiter's next token and tells the observer how long that took.
asio::awaitable<void> Client::throttle() {
  Duration wait = limiter_.reserve(clock_.now());
  co_await sleep(wait);
  if (options_.on_request) options_.on_request(wait);
}

asio::awaitable<void> Client::sleep(Duration d) {
  if (d <= Duration::zero()) co_return;
  asio::steady_timer t(executor_);
  t.expires_after(d);
  auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  (void)ec;
}

asio::awaitable<Result<Credential>> Client::credential(bool refresh) {
  if (!credentials_) co_return Credential{};
  Result<Credential> c = Error::internal("unset");
  if (credentials_->may_block()) {
    // The function is a named local, not a temporary of the co_await expression: GCC 12 destroyed
    // that temporary twice, releasing the captured credential source once too often (AddressSanitizer:
    // a use after free when the client was destroyed after an exec plugin's credential).
    auto source = credentials_;
    auto get = [source, refresh]() -> asio::awaitable<Result<Credential>> { co_return source->get(refresh); };
    c = co_await asio::co_spawn(blocking_pool(), std::move(get), asio::use_awaitable);
  } else {
    c = credentials_->get(refresh);
  }
  if (c && !c->client_certificate_pem.empty() && (!applied_certificate_ || !(*applied_certificate_ == *c))) {
    if (auto r = transport_->set_client_certificate(c->client_certificate_pem, c->client_key_pem); !r) co_return r.error();
    applied_certificate_ = *c;
  }
  co_return c;
}

asio::awaitable<Result<HttpResponse>> Client::execute(Request req) {
  req.headers.emplace_back("User-Agent", options_.user_agent);
  bool refreshed = false;
  int throttled = 0, network = 0;
  for (;;) {
    co_await throttle();
    auto cred = co_await credential(false);
    if (!cred) co_return cred.error();
    Request attempt = req;
    // Like kubectl, bearer tokens travel only over TLS.
    if (config_.tls() && !cred->token.empty()) attempt.headers.emplace_back("Authorization", "Bearer " + cred->token);
    ++requests_sent_;
    auto r = co_await transport_->send(attempt, options_.request_timeout);
    if (options_.on_response) options_.on_response(r ? r->status : 0);
    if (!r) {
      Error e = r.error();
      if (req.idempotent && e.is_retryable() && network < options_.network_retries) {
        ++network;
        logger.debug(1, "retrying after a transport error", {{"path", req.path}, {"error", e}});
        co_await sleep(options_.network_retry_delay * network);
        continue;
      }
      co_return e.wrap(fmt::format("{} {}", req.method, req.path));
    }
    if (r->status / 100 == 2) co_return std::move(*r);
    if (r->status == 401 && !refreshed && credentials_) {
      // Tokens rotate: read them again (or re-run the plugin) and retry once.
      refreshed = true;
      auto fresh = co_await credential(true);
      if (fresh) continue;
    }
    Error e = error_from_response(*r);
    // A 429 means the server did not act on the request: resend it after Retry-After, except an
    // eviction, whose refusal by a budget is the caller's to handle. A 5xx may have been acted
    // on: resend only what is idempotent.
    bool eviction = req.path.ends_with("/eviction");
    bool retryable = (e.code == 429 && !eviction) || (e.code >= 500 && e.code != 501 && req.idempotent);
    if (e.retry_after_seconds && retryable && throttled + 1 < options_.max_attempts) {
      ++throttled;
      Duration wait = std::min<Duration>(std::chrono::seconds(*e.retry_after_seconds), options_.max_retry_after);
      logger.debug(1, "retrying after the server asked to wait", {{"path", req.path}, {"code", e.code}, {"wait", wait}});
      co_await sleep(wait);
      continue;
    }
    co_return e;
  }
}

asio::awaitable<Result<std::string>> Client::object_body(Request req) {
  std::string path = req.path;
  auto r = co_await execute(std::move(req));
  if (!r) co_return r.error();
  // Checked against JSON's grammar (one scan, nothing built): a body that is not JSON is the
  // request's error, not its caller's.
  model::JsonReader check(r->body);
  check.skip();
  if (!check.finish()) co_return Error::decode(check.error()).wrap(fmt::format("response to {}", path));
  co_return std::move(r->body);
}

asio::awaitable<Result<std::string>> Client::get(const Resource& r, std::string_view ns, std::string_view name,
                                                 std::string_view subresource) {
  co_return co_await object_body(get_request(r, ns, name, subresource));
}

asio::awaitable<Result<ListPageMeta>> Client::list_page(const Resource& r, std::string_view ns, ListOptions o,
                                                        const std::function<void(model::JsonReader&)>& on_item) {
  Request req = list_request(r, ns, o);
  std::string path = req.path;
  auto resp = co_await execute(std::move(req));
  if (!resp) co_return resp.error();
  ListPageMeta page;
  model::JsonReader reader(resp->body);
  std::string_view key, value;
  bool has_items = false;
  if (reader.begin_object())
    while (reader.next_member(key)) {
      if (key == "items") {
        if (has_items) co_return Error::decode(fmt::format("list of {}: items is given twice", r.plural));
        has_items = true;
        if (reader.peek() == model::JsonType::kArray) {
          reader.begin_array();
          while (reader.next_element()) on_item(reader);
        } else if (reader.peek() == model::JsonType::kNull) {
          reader.read_null();
        } else {
          co_return Error::decode(fmt::format("list of {}: items is not an array", r.plural));
        }
      } else if (key == "metadata" && reader.peek() == model::JsonType::kObject) {
        reader.begin_object();
        while (reader.next_member(key)) {
          if ((key == "resourceVersion" || key == "continue") && reader.peek() == model::JsonType::kString) {
            reader.read_string(value);
            (key == "continue" ? page.continue_token : page.resource_version) = value;
          } else {
            reader.skip();
          }
        }
      } else {
        reader.skip();
      }
    }
  if (!reader.finish()) co_return Error::decode(reader.error()).wrap(fmt::format("response to {}", path));
  if (!has_items) co_return Error::decode(fmt::format("list of {} has no items array", r.plural));
  co_return page;
}

asio::awaitable<Result<std::string>> Client::list_each(const Resource& r, std::string_view ns, ListOptions o,
                                                       std::function<void(model::JsonReader&)> on_item) {
  ListOptions first = o;
  size_t delivered = 0;
  auto count = [&](model::JsonReader& item) {
    on_item(item);
    ++delivered;
  };
  for (int restarts = 0;; ++restarts) {
    std::string rv;
    bool expired = false;
    for (;;) {
      auto page = co_await list_page(r, ns, o, count);
      if (!page) {
        if (page.error().is_expired() && !o.continue_token.empty() && restarts < 2) {
          expired = true;
          break;
        }
        co_return page.error();
      }
      if (rv.empty()) rv = page->resource_version;
      if (page->continue_token.empty()) co_return rv;
      o.continue_token = page->continue_token;
      o.resource_version.clear();
      o.resource_version_match.clear();
    }
    if (expired && delivered > 0) {
      // Items already delivered belong to an old snapshot: the caller must start over too.
      co_return Error::api(410, "Expired", fmt::format("the continue token of a {} list expired mid-way; list again", r.plural));
    }
    o = first;
  }
}

asio::awaitable<Result<std::string>> Client::create(const Resource& r, std::string_view ns, std::string body, WriteOptions o) {
  co_return co_await object_body(create_request(r, ns, std::move(body), o));
}

asio::awaitable<Result<std::string>> Client::update(const Resource& r, std::string_view ns, std::string_view name, std::string body,
                                                    WriteOptions o) {
  co_return co_await object_body(update_request(r, ns, name, std::move(body), o));
}

asio::awaitable<Result<std::string>> Client::update_status(const Resource& r, std::string_view ns, std::string_view name, std::string body,
                                                           WriteOptions o) {
  co_return co_await object_body(update_request(r, ns, name, std::move(body), o, "status"));
}

asio::awaitable<Result<std::string>> Client::patch(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                                                   std::string body, WriteOptions o) {
  co_return co_await object_body(patch_request(r, ns, name, type, std::move(body), o));
}

asio::awaitable<Result<std::string>> Client::patch_status(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                                                          std::string body, WriteOptions o) {
  co_return co_await object_body(patch_request(r, ns, name, type, std::move(body), o, "status"));
}

asio::awaitable<Result<void>> Client::remove(const Resource& r, std::string_view ns, std::string_view name, DeleteOptions o) {
  auto resp = co_await execute(delete_request(r, ns, name, o));
  if (!resp) co_return resp.error();
  co_return Result<void>{};
}

asio::awaitable<Result<void>> Client::evict(std::string_view ns, std::string_view name, DeleteOptions o) {
  auto resp = co_await execute(eviction_request(ns, name, o));
  if (!resp) co_return resp.error();
  co_return Result<void>{};
}

asio::awaitable<Result<RawWatch>> Client::watch(const Resource& r, std::string_view ns, WatchOptions o) {
  Request req = watch_request(r, ns, o);
  req.headers.emplace_back("User-Agent", options_.user_agent);
  co_await throttle();
  Duration idle = o.timeout_seconds ? std::chrono::seconds(*o.timeout_seconds) + options_.watch_idle_margin
                                    : std::chrono::minutes(60) + options_.watch_idle_margin;
  for (int attempt = 0;; ++attempt) {
    auto cred = co_await credential(attempt > 0);
    if (!cred) co_return cred.error();
    Request sent = req;
    if (config_.tls() && !cred->token.empty()) sent.headers.emplace_back("Authorization", "Bearer " + cred->token);
    ++requests_sent_;
    auto resp = co_await transport_->open(sent, options_.request_timeout);
    if (options_.on_response) options_.on_response(resp ? resp->status : 0);
    if (!resp) co_return resp.error().wrap(fmt::format("watch {}", r.plural));
    if (resp->status == 401 && attempt == 0 && credentials_) continue;
    if (resp->status / 100 != 2) {
      HttpResponse whole{resp->status, resp->headers, resp->body};
      co_return error_from_response(whole);
    }
    co_return RawWatch(std::move(resp->stream), idle);
  }
}

asio::awaitable<Result<std::optional<RawWatchEvent>>> RawWatch::next() {
  for (;;) {
    size_t nl = buffer_.find('\n', scanned_);
    bool ended = false;
    if (nl == std::string::npos) {
      scanned_ = buffer_.size();
      if (!body_) co_return std::nullopt;
      auto more = co_await body_->read(idle_);
      if (!more) co_return more.error();
      if (!more->empty()) {
        buffer_ += *more;
        continue;
      }
      ended = true;
      body_.reset();
      if (buffer_.find_first_not_of(" \r\n\t") == std::string::npos) co_return std::nullopt;
      nl = buffer_.size();
    }
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + (ended ? 0 : 1));
    scanned_ = 0;
    if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
    // The event's type and object's place in one pass; the object is decoded from the text.
    RawWatchEvent e;
    e.line = std::move(line);
    model::JsonReader reader(e.line);
    std::string_view key, type, object;
    if (reader.begin_object())
      while (reader.next_member(key)) {
        if (key == "type" && reader.peek() == model::JsonType::kString) reader.read_string(type);
        else if (key == "object" && reader.peek() == model::JsonType::kObject) reader.read_raw(object);
        else reader.skip();
      }
    if (!reader.finish()) co_return Error::decode(reader.error()).wrap("watch event");
    if (object.empty()) co_return Error::decode("watch event without an object");
    if (type == "ERROR") {
      if (auto status = status_error(object, 500)) co_return *status;
      co_return Error::decode("watch event of type ERROR without a Status object");
    }
    if (type == "ADDED") e.type = WatchEventType::kAdded;
    else if (type == "MODIFIED") e.type = WatchEventType::kModified;
    else if (type == "DELETED") e.type = WatchEventType::kDeleted;
    else if (type == "BOOKMARK") e.type = WatchEventType::kBookmark;
    else co_return Error::decode(fmt::format("unknown watch event type \"{}\"", type));
    e.object_begin = static_cast<size_t>(object.data() - e.line.data());
    e.object_size = object.size();
    e.resource_version = model::object_resource_version(object);
    co_return std::optional<RawWatchEvent>(std::move(e));
  }
}

void RawWatch::close() {
  // Not body_.reset(): next() may be suspended in a read on it; closing ends that read.
  if (body_) body_->close();
}

}  // namespace spotshift::kube
