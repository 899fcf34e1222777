// The simulator's I/O: a Beast HTTP/1.1 server (plain or TLS) with one coroutine per
// connection, chunked watch streams, bearer-token and client-certificate authentication, the
// audit log, and the loop that runs the simulated controllers. Everything runs on one thread.

#include "simulator.hpp"
#include "webhooks.hpp"

#include "api.hpp"
#include "controllers.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "scenario.hpp"

#include <fmt/format.h>
#include <openssl/x509.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <thread>

namespace spotshift::kubesim {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

namespace {

const log::Logger logger("kubesim");

std::string unauthorized_body() {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})";
}

}  // namespace

std::string to_json(const AuditRecord& r) {
  return fmt::format(R"({{"time":{},"userAgent":{},"user":{},"verb":{},"method":{},"path":{},"query":{},"resource":{},"code":{}}})",
                     json_quote(r.time), json_quote(r.user_agent), json_quote(r.user), json_quote(r.verb), json_quote(r.method),
                     json_quote(r.path), json_quote(r.query), json_quote(r.resource), r.code);
}

struct Simulator::Impl {
  // Declaration order is destruction order, reversed. Coroutines still pending when the thread
  // stops (a watch stuck writing to a client that does not read, a request in a fault's delay)
  // are destroyed with the io_context, and their destructors use what they point to: the
  // waiters set, the TLS context, the API, the cluster. So everything below up to `ioc` must
  // outlive it, and the acceptor, which needs the io_context, goes first.
  SimulatorOptions options;
  SimClock clock;
  Cluster cluster;
  std::unique_ptr<Api> api;
  std::unique_ptr<Controllers> controllers;
  std::optional<net::ssl::context> ssl;
  uint16_t port = 0;
  bool stopping = false;
  bool started = false;
  std::optional<CertificateAuthority> ca;
  std::string ca_pem;
  std::map<std::string, UserInfo> tokens;  // token -> user
  std::string admin_token;
  std::set<net::steady_timer*> waiters;  // woken on every change
  mutable std::mutex audit_mutex;
  std::vector<AuditRecord> audit;
  std::ofstream audit_file;
  net::io_context ioc{1};
  std::optional<tcp::acceptor> acceptor;
  std::thread thread;

  explicit Impl(SimulatorOptions o) : options(std::move(o)), clock(options.time_scale), cluster(clock, options.cluster) {}

  void wake_all() {
    for (auto* t : waiters) t->cancel();
  }

  Result<void> setup_tls() {
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
      auto cert = read_file(options.tls_cert_file);
      if (!cert) return cert.error();
      auto key = read_file(options.tls_key_file);
      if (!key) return key.error();
      if (!options.tls_ca_file.empty()) {
        auto c = read_file(options.tls_ca_file);
        if (!c) return c.error();
        ca_pem = *c;
      } else {
        ca_pem = *cert;
      }
      ssl.emplace(net::ssl::context::tls_server);
      ssl->use_certificate_chain(net::buffer(*cert));
      ssl->use_private_key(net::buffer(*key), net::ssl::context::pem);
    } else {
      auto made = CertificateAuthority::create("kubesim-ca");
      if (!made) return made.error();
      ca = std::move(*made);
      auto serving = ca->issue_server({"localhost", "kubesim"}, {"127.0.0.1", "::1"});
      if (!serving) return serving.error();
      ca_pem = ca->cert_pem();
      ssl.emplace(net::ssl::context::tls_server);
      ssl->use_certificate_chain(net::buffer(serving->cert_pem));
      ssl->use_private_key(net::buffer(serving->key_pem), net::ssl::context::pem);
    }
    // Client certificates are optional; one that is presented must chain to the CA.
    ssl->add_certificate_authority(net::buffer(ca_pem));
    ssl->set_verify_mode(net::ssl::verify_peer);
    ssl->set_verify_callback([](bool preverified, net::ssl::verify_context&) { return preverified; });
    return {};
  }

  Result<void> setup_tokens() {
    if (!options.token_file.empty()) {
      auto text = read_file(options.token_file);
      if (!text) return text.error();
      for (auto line : split(*text, '\n')) {
        line = trim(line);
        if (line.empty() || line.starts_with("#")) continue;
        // token[,user[,uid[,"group1,group2"]]], as kube-apiserver's --token-auth-file.
        auto parts = split(line, ',');
        std::string token(trim(parts[0]));
        UserInfo user{parts.size() > 1 ? std::string(trim(parts[1])) : "admin", {}};
        for (size_t i = 3; i < parts.size(); ++i) {
          std::string g(trim(parts[i]));
          std::erase(g, '"');
          if (!g.empty()) user.groups.push_back(g);
        }
        add_token(token, std::move(user));
      }
    }
    // The tests' own tokens: service accounts as they are, anyone else an administrator.
    for (const auto& [token, user] : options.tokens) {
      UserInfo u{user, {}};
      if (!u.is_service_account()) u.groups.push_back("system:masters");
      add_token(token, std::move(u));
    }
    if (options.tls && tokens.empty()) add_token("kubesim-" + cluster.new_uid(), UserInfo{"admin", {"system:masters"}});
    return {};
  }

  void add_token(const std::string& token, UserInfo user) {
    std::vector<std::string> implied = {"system:authenticated"};
    if (user.is_service_account()) implied = service_account_groups(user.name);
    for (auto& g : implied)
      if (std::find(user.groups.begin(), user.groups.end(), g) == user.groups.end()) user.groups.push_back(std::move(g));
    if (admin_token.empty() && !user.is_service_account()) admin_token = token;
    tokens[token] = std::move(user);
  }

  void record(const HttpRequest& req, const HttpResponse& resp, const std::string& user, int code) {
    AuditRecord r;
    r.time = format_micro_time(std::chrono::system_clock::now());
    r.user_agent = req.user_agent;
    r.user = user;
    r.verb = resp.verb;
    r.method = req.method;
    r.path = req.path;
    r.query = req.raw_query;
    r.resource = resp.resource;
    r.code = code;
    std::lock_guard lock(audit_mutex);
    if (audit_file.is_open()) audit_file << to_json(r) << '\n' << std::flush;
    audit.push_back(std::move(r));
  }

  static HttpRequest convert(const http::request<http::string_body>& req) {
    HttpRequest out;
    out.method = std::string(req.method_string());
    std::string_view target = req.target();
    auto q = target.find('?');
    auto path = url_decode(target.substr(0, q), false);
    out.path = path ? *path : std::string(target.substr(0, q));
    if (q != std::string_view::npos) {
      out.raw_query = std::string(target.substr(q + 1));
      for (auto part : split(out.raw_query, '&')) {
        if (part.empty()) continue;
        auto eq = part.find('=');
        auto k = url_decode(part.substr(0, eq), true);
        auto v = eq == std::string_view::npos ? Result<std::string>(std::string()) : url_decode(part.substr(eq + 1), true);
        if (k && v) out.query[*k] = *v;
      }
    }
    out.accept = std::string(req[http::field::accept]);
    out.content_type = std::string(req[http::field::content_type]);
    out.user_agent = std::string(req[http::field::user_agent]);
    if (auto it = req.find("Impersonate-User"); it != req.end()) out.impersonate_user = std::string(it->value());
    for (auto [it, end] = req.equal_range("Impersonate-Group"); it != end; ++it) out.impersonate_groups.emplace_back(it->value());
    out.body = req.body();
    return out;
  }

  template <class Stream>
  std::string authenticate(Stream& stream, const http::request<http::string_body>& req, bool& ok, std::optional<UserInfo>& info) {
    ok = true;
    if (!options.tls) return "";
    std::string_view auth = req[http::field::authorization];
    if (auth.starts_with("Bearer ")) {
      auto it = tokens.find(std::string(trim(auth.substr(7))));
      if (it != tokens.end()) {
        info = it->second;
        return it->second.name;
      }
      ok = false;
      return "";
    }
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      SSL* native = stream.native_handle();
      if (X509* peer = SSL_get1_peer_certificate(native)) {
        // The user is the certificate's CN and its groups the O entries, as kube-apiserver reads
        // client certificates.
        char cn[256] = "";
        X509_NAME* subject = X509_get_subject_name(peer);
        X509_NAME_get_text_by_NID(subject, NID_commonName, cn, sizeof cn);
        UserInfo user{cn, {}};
        for (int i = X509_NAME_get_index_by_NID(subject, NID_organizationName, -1); i >= 0;
             i = X509_NAME_get_index_by_NID(subject, NID_organizationName, i)) {
          const ASN1_STRING* o = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
          user.groups.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(o)), ASN1_STRING_length(o));
        }
        user.groups.push_back("system:authenticated");
        X509_free(peer);
        if (SSL_get_verify_result(native) == X509_V_OK) {
          info = user;
          return user.name;
        }
      }
    }
    ok = false;
    return "";
  }

  net::awaitable<void> sleep(std::chrono::nanoseconds d) {
    net::steady_timer t(ioc);
    t.expires_after(d);
    co_await t.async_wait(net::as_tuple(net::use_awaitable));
  }

  template <class Stream>
  net::awaitable<bool> stream_watch(Stream& stream, const http::request<http::string_body>& req, HttpResponse& resp) {
    auto& tcp_layer = beast::get_lowest_layer(stream);
    http::response<http::empty_body> res{http::status::ok, req.version()};
    res.set(http::field::content_type, resp.content_type);
    res.set(http::field::cache_control, "no-cache, private");
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    tcp_layer.expires_after(30s);
    auto [ec, n] = co_await http::async_write_header(stream, sr, net::as_tuple(net::use_awaitable));
    if (ec) co_return false;
    WatchStream& w = *resp.watch;
    auto start = std::chrono::steady_clock::now();
    auto deadline = start + w.spec().timeout;
    auto next_bookmark = start + options.bookmark_interval;
    auto drop_at = resp.watch_drop_after_ms >= 0 ? start + std::chrono::milliseconds(resp.watch_drop_after_ms)
                                                 : std::chrono::steady_clock::time_point::max();
    uint64_t generation = api->watch_generation();
    net::steady_timer wake(ioc);
    waiters.insert(&wake);
    struct Unregister {
      std::set<net::steady_timer*>& s;
      net::steady_timer* t;
      ~Unregister() { s.erase(t); }
    } unregister{waiters, &wake};

    auto write = [&](const std::string& data) -> net::awaitable<bool> {
      if (data.empty()) co_return true;
      tcp_layer.expires_after(30s);
      auto [wec, wn] = co_await net::async_write(stream, http::make_chunk(net::buffer(data)), net::as_tuple(net::use_awaitable));
      co_return !wec;
    };
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      if (stopping || api->watch_generation() != generation || now >= drop_at ||
          (resp.watch_drop_after_events >= 0 && w.events_sent() >= static_cast<size_t>(resp.watch_drop_after_events))) {
        // Abrupt end: no final chunk, the connection just goes away.
        tcp_layer.socket().set_option(net::socket_base::linger(true, 0));
        tcp_layer.close();
        co_return false;
      }
      // A change made while the write below is in flight cancels no wait; comparing the store's
      // version before waiting catches it (otherwise it would sit until the next bookmark).
      const uint64_t polled_rv = cluster.store().resource_version();
      std::string data = now >= next_bookmark ? w.bookmark() : w.poll();
      if (now >= next_bookmark) next_bookmark = now + options.bookmark_interval;
      if (resp.watch_drop_after_events >= 0 && !data.empty()) {
        // Cut exactly after N events.
        size_t allowed = static_cast<size_t>(resp.watch_drop_after_events);
        size_t sent_before = w.events_sent() - static_cast<size_t>(std::count(data.begin(), data.end(), '\n'));
        if (w.events_sent() > allowed) {
          size_t keep = allowed > sent_before ? allowed - sent_before : 0;
          size_t pos = 0;
          for (size_t i = 0; i < keep; ++i) pos = data.find('\n', pos) + 1;
          data.resize(pos);
        }
      }
      if (!co_await write(data)) co_return false;
      if (w.finished()) break;
      if (now >= deadline) {
        if (!co_await write(w.bookmark())) co_return false;
        break;
      }
      if (cluster.store().resource_version() != polled_rv) continue;
      auto until = std::min({deadline, next_bookmark, drop_at});
      wake.expires_at(until);
      co_await wake.async_wait(net::as_tuple(net::use_awaitable));
    }
    tcp_layer.expires_after(30s);
    auto [lec, ln] = co_await net::async_write(stream, http::make_chunk_last(), net::as_tuple(net::use_awaitable));
    co_return !lec;
  }

  template <class Stream>
  net::awaitable<void> serve(Stream& stream) {
    auto& tcp_layer = beast::get_lowest_layer(stream);
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(512 * 1024 * 1024);
      tcp_layer.expires_after(5min);
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, net::as_tuple(net::use_awaitable));
      if (ec) co_return;
      auto& req = parser.get();
      HttpRequest hreq = convert(req);
      bool authorized = true;
      std::string user = authenticate(stream, req, authorized, hreq.user);
      HttpResponse resp;
      if (!authorized) {
        resp.status = 401;
        resp.body = unauthorized_body();
      } else {
        try {
          resp = api->handle(hreq);
        } catch (const std::exception& e) {
          logger.error("request failed", {{"path", hreq.path}, {"error", e.what()}});
          resp = HttpResponse{};
          resp.status = 500;
          resp.body = status_body(Error::api(500, "InternalError", fmt::format("Internal error occurred: {}", e.what())), nullptr, "");
        }
        if (hreq.path.starts_with("/_sim/")) wake_all();
      }
      if (resp.delay.count() > 0) co_await sleep(resp.delay);
      record(hreq, resp, user, resp.status);
      if (resp.watch) {
        co_await stream_watch(stream, req, resp);
        co_return;  // a watch uses its connection to the end
      }
      http::response<http::string_body> res{static_cast<http::status>(resp.status), req.version()};
      res.set(http::field::content_type, resp.content_type);
      res.set(http::field::cache_control, "no-cache, private");
      for (const auto& [k, v] : resp.headers) res.insert(k, v);
      res.keep_alive(req.keep_alive());
      if (resp.reset) {
        // Announce the whole body, send half of it, then reset the connection.
        std::string head =
            fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n", resp.status,
                        std::string(http::obsolete_reason(static_cast<http::status>(resp.status))), resp.content_type, resp.body.size());
        std::string partial = head + resp.body.substr(0, resp.body.size() / 2);
        co_await net::async_write(stream, net::buffer(partial), net::as_tuple(net::use_awaitable));
        tcp_layer.socket().set_option(net::socket_base::linger(true, 0));
        tcp_layer.close();
        co_return;
      }
      res.body() = std::move(resp.body);
      res.prepare_payload();
      tcp_layer.expires_after(60s);
      auto [wec, wn] = co_await http::async_write(stream, res, net::as_tuple(net::use_awaitable));
      if (wec || !res.keep_alive()) co_return;
    }
  }

  net::awaitable<void> session(tcp::socket socket) {
    beast::tcp_stream tcp_stream(std::move(socket));
    if (!ssl) {
      co_await serve(tcp_stream);
      beast::error_code ignored;
      tcp_stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      co_return;
    }
    beast::ssl_stream<beast::tcp_stream> tls(std::move(tcp_stream), *ssl);
    beast::get_lowest_layer(tls).expires_after(30s);
    auto [ec] = co_await tls.async_handshake(net::ssl::stream_base::server, net::as_tuple(net::use_awaitable));
    if (ec) co_return;  // a client that rejected our certificate, or sent a bad one
    co_await serve(tls);
    beast::get_lowest_layer(tls).expires_after(2s);
    co_await tls.async_shutdown(net::as_tuple(net::use_awaitable));
  }

  net::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor->async_accept(net::as_tuple(net::use_awaitable));
      if (ec) {
        if (stopping) co_return;
        continue;
      }
      net::co_spawn(ioc, session(std::move(socket)), [](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          logger.warn("connection ended with an error", {{"error", ex.what()}});
        }
      });
    }
  }

  net::awaitable<void> controller_loop() {
    net::steady_timer wake(ioc);
    waiters.insert(&wake);
    while (!stopping) {
      int rounds = 0;
      bool busy = false;
      while ((busy = controllers->run()) && ++rounds < 20) {}
      auto wait = std::chrono::nanoseconds(1s);
      if (auto due = controllers->next_deadline()) wait = std::min(wait, clock.real_until(*due));
      if (busy) wait = std::chrono::nanoseconds(0);
      wake.expires_after(wait);
      co_await wake.async_wait(net::as_tuple(net::use_awaitable));
    }
    waiters.erase(&wake);
  }
};

Simulator::Simulator(SimulatorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Simulator::~Simulator() { stop(); }

Result<void> Simulator::start() {
  Impl& s = *impl_;
  if (s.started) return Error::internal("the simulator is already started");
  if (auto r = s.setup_tokens(); !r) return r;
  if (s.options.tls)
    if (auto r = s.setup_tls(); !r) return r;
  s.cluster.set_root_ca(s.ca_pem);
  s.cluster.set_webhook_caller(post_webhook);
  if (!s.options.scenario_path.empty()) {
    auto r = load_scenario_file(s.cluster, s.options.scenario_path);
    if (!r) return r.error();
  } else if (!s.options.scenario_text.empty()) {
    auto r = load_scenario_text(s.cluster, s.options.scenario_text);
    if (!r) return r.error();
  }
  if (!s.options.audit_log_path.empty()) {
    s.audit_file.open(s.options.audit_log_path, std::ios::app);
    if (!s.audit_file) return Error::config(fmt::format("cannot open audit log {}", s.options.audit_log_path));
  }
  boost::system::error_code ec;
  auto address = net::ip::make_address(s.options.address, ec);
  if (ec) return Error::invalid(fmt::format("invalid listen address \"{}\": {}", s.options.address, ec.message()));
  s.acceptor.emplace(s.ioc);
  tcp::endpoint ep(address, s.options.port);
  s.acceptor->open(ep.protocol(), ec);
  if (!ec) s.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(ep, ec);
  if (!ec) s.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error::network(fmt::format("cannot listen on {}:{}: {}", s.options.address, s.options.port, ec.message()));
  s.port = s.acceptor->local_endpoint().port();
  ApiOptions api_options;
  api_options.continue_ttl = s.options.continue_ttl;
  api_options.server_address = fmt::format("{}:{}", s.options.address, s.port);
  s.api = std::make_unique<Api>(s.cluster, api_options);
  s.controllers = std::make_unique<Controllers>(s.cluster);
  s.cluster.store().subscribe([&s](const Change&) { s.wake_all(); });
  net::co_spawn(s.ioc, s.accept_loop(), net::detached);
  net::co_spawn(s.ioc, s.controller_loop(), [](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      logger.error("controller loop failed", {{"error", ex.what()}});
    }
  });
  s.started = true;
  s.thread = std::thread([&s] {
    try {
      s.ioc.run();
    } catch (const std::exception& e) {
      logger.error("simulator thread failed", {{"error", e.what()}});
    }
  });
  return {};
}

void Simulator::stop() {
  Impl& s = *impl_;
  if (!s.started) return;
  s.started = false;
  net::post(s.ioc, [&s] {
    s.stopping = true;
    boost::system::error_code ec;
    s.acceptor->close(ec);
    s.wake_all();
  });
  // Give open watches a moment to see the flag, then stop regardless.
  std::this_thread::sleep_for(20ms);
  s.ioc.stop();
  if (s.thread.joinable()) s.thread.join();
}

uint16_t Simulator::port() const { return impl_->port; }

std::string Simulator::url() const {
  return fmt::format("{}://{}:{}", impl_->options.tls ? "https" : "http", impl_->options.address, impl_->port);
}

const std::string& Simulator::ca_pem() const { return impl_->ca_pem; }
const CertificateAuthority* Simulator::ca() const { return impl_->ca ? &*impl_->ca : nullptr; }
std::string Simulator::admin_token() const { return impl_->admin_token; }

std::string Simulator::kubeconfig(std::optional<std::string> token) const {
  std::string cluster = fmt::format("    server: {}\n", url());
  if (impl_->options.tls) cluster += fmt::format("    certificate-authority-data: {}\n", base64_encode(impl_->ca_pem));
  std::string user = "  user: {}\n";
  std::string t = token.value_or(impl_->admin_token);
  if (impl_->options.tls && !t.empty()) user = fmt::format("  user:\n    token: {}\n", t);
  return fmt::format(
      "apiVersion: v1\nkind: Config\nclusters:\n- name: kubesim\n  cluster:\n{}contexts:\n- name: kubesim\n  context:\n"
      "    cluster: kubesim\n    user: kubesim-admin\n    namespace: default\ncurrent-context: kubesim\nusers:\n"
      "- name: kubesim-admin\n{}",
      cluster, user);
}

Result<void> Simulator::write_kubeconfig(const std::string& path, std::optional<std::string> token) const {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Error::config(fmt::format("cannot write kubeconfig {}", path));
  out << kubeconfig(std::move(token));
  return {};
}

Faults& Simulator::faults() { return impl_->cluster.faults(); }

void Simulator::run(const std::function<void(Cluster&)>& fn) {
  std::promise<void> done;
  net::post(impl_->ioc, [&] {
    try {
      fn(impl_->cluster);
    } catch (...) {
      done.set_exception(std::current_exception());
      return;
    }
    done.set_value();
  });
  done.get_future().get();
}

void Simulator::drop_watches() {
  run([this](Cluster&) {
    impl_->api->drop_watches();
    impl_->wake_all();
  });
}

std::vector<AuditRecord> Simulator::audit() const {
  std::lock_guard lock(impl_->audit_mutex);
  return impl_->audit;
}

void Simulator::clear_audit() {
  std::lock_guard lock(impl_->audit_mutex);
  impl_->audit.clear();
}

}  // namespace spotshift::kubesim
