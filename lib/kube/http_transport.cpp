// The real transport: Beast over TCP or OpenSSL. One coroutine per request; every step has a
// deadline set on the stream before it starts.

#include "kube/transport.hpp"

#include <fmt/format.h>
#include <openssl/x509_vfy.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <cctype>

namespace spotshift::kube {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

const std::string* find_header(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (k.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < k.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(k[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    if (same) return &v;
  }
  return nullptr;
}

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

Error io_error(const beast::error_code& ec, std::string_view what, const std::string& where) {
  if (ec == beast::error::timeout) return Error::timeout(fmt::format("{} {}: timed out", what, where));
  if (ec == asio::error::operation_aborted) return Error::cancelled(fmt::format("{} {}: cancelled", what, where));
  return Error::network(fmt::format("{} {}: {}", what, where, ec.message()));
}

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

struct Connection {
  // Beast reads into `buffer` no more than its free capacity (at least 512 bytes). Left to grow
  // from the size of the headers, that cost a system call for every few hundred bytes of a busy
  // watch or a large list page: room for 64 KiB reads a burst of events, or 64 KiB of a page,
  // in one.
  static constexpr size_t kReadBufferBytes = 64 * 1024;
  Connection() { buffer.reserve(kReadBufferBytes); }

  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  bool reused = false;
  beast::tcp_stream& tcp() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
};

template <class Stream>
http::request<http::string_body> to_beast(const Request& req, const std::string& host_header) {
  http::request<http::string_body> r;
  r.method_string(req.method);
  r.target(req.target());
  r.version(11);
  r.set(http::field::host, host_header);
  for (const auto& [k, v] : req.headers) r.insert(k, v);
  r.keep_alive(true);
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    r.body() = req.body;
    r.prepare_payload();
  }
  return r;
}

Headers headers_of(const http::fields& f) {
  Headers out;
  for (const auto& field : f) out.emplace_back(std::string(field.name_string()), std::string(field.value()));
  return out;
}

class HttpTransport;

// A watch body: the connection it arrived on belongs to it until it ends.
class StreamedBody final : public BodyStream {
 public:
  StreamedBody(std::unique_ptr<Connection> conn, std::unique_ptr<http::response_parser<http::buffer_body>> parser, std::string where)
      : conn_(std::move(conn)), parser_(std::move(parser)), where_(std::move(where)) {}

  asio::awaitable<Result<std::string>> read(Duration idle) override {
    if (closed_) co_return Error::cancelled("watch stream closed");
    if (parser_->is_done()) co_return std::string();
    char buf[16384];
    for (;;) {
      parser_->get().body().data = buf;
      parser_->get().body().size = sizeof buf;
      conn_->tcp().expires_after(idle);
      beast::error_code ec;
      if (conn_->secure) {
        std::tie(ec, std::ignore) = co_await http::async_read_some(*conn_->secure, conn_->buffer, *parser_, kTuple);
      } else {
        std::tie(ec, std::ignore) = co_await http::async_read_some(*conn_->plain, conn_->buffer, *parser_, kTuple);
      }
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        bool closed_here = closed_;
        close();
        if (closed_here) co_return Error::cancelled("watch stream closed");
        co_return io_error(ec, "watch stream from", where_);
      }
      size_t got = sizeof buf - parser_->get().body().size;
      if (got > 0) co_return std::string(buf, got);
      if (parser_->is_done()) co_return std::string();
    }
  }

  // Closes the socket, which ends a pending read with an error. The connection object itself
  // lives until this body is destroyed, because a read in flight still refers to it.
  void close() override {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    conn_->tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
    conn_->tcp().close();
  }

 private:
  bool closed_ = false;
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  std::string where_;
};

class HttpTransport final : public Transport {
 public:
  HttpTransport(asio::any_io_executor ex, ClientConfig config, TransportOptions options)
      : ex_(std::move(ex)), config_(std::move(config)), options_(options) {
    host_header_ = config_.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", config_.host, config_.port)
                                                               : fmt::format("{}:{}", config_.host, config_.port);
  }

  Result<void> init() {
    if (!config_.tls()) return {};
    return make_context(config_.client_certificate_pem, config_.client_key_pem);
  }

  Result<void> set_client_certificate(const std::string& cert_pem, const std::string& key_pem) override {
    if (!config_.tls()) return Error::config("a client certificate needs an https server");
    auto r = make_context(cert_pem, key_pem);
    if (r) idle_.clear();
    return r;
  }

  asio::awaitable<Result<HttpResponse>> send(const Request& req, Duration timeout) override {
    // A pooled connection may have been closed by the server while idle: one fresh retry.
    for (int attempt = 0;; ++attempt) {
      auto conn = co_await connection(timeout, attempt == 0);
      if (!conn) co_return conn.error();
      bool reused = (*conn)->reused;
      bool keep_alive = false;
      // Not `secure ? co_await a : co_await b`: GCC 12 destroys the result twice when co_await
      // appears in a conditional expression.
      Result<HttpResponse> r = Error::internal("unset");
      if ((*conn)->secure) r = co_await exchange(**conn, *(*conn)->secure, req, timeout, keep_alive);
      else r = co_await exchange(**conn, *(*conn)->plain, req, timeout, keep_alive);
      if (!r && reused && r.error().kind == ErrorKind::kNetwork && attempt == 0) continue;
      if (r && keep_alive && idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(*conn));
      co_return r;
    }
  }

  asio::awaitable<Result<StreamResponse>> open(const Request& req, Duration timeout) override {
    auto conn = co_await connection(timeout, false);
    if (!conn) co_return conn.error();
    auto c = std::move(*conn);
    auto breq = to_beast<void>(req, host_header_);
    c->tcp().expires_after(timeout);
    beast::error_code ec;
    if (c->secure) std::tie(ec, std::ignore) = co_await http::async_write(*c->secure, breq, kTuple);
    else std::tie(ec, std::ignore) = co_await http::async_write(*c->plain, breq, kTuple);
    if (ec) co_return io_error(ec, "sending a request to", config_.authority());
    auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
    parser->body_limit(boost::none);
    if (c->secure) std::tie(ec, std::ignore) = co_await http::async_read_header(*c->secure, c->buffer, *parser, kTuple);
    else std::tie(ec, std::ignore) = co_await http::async_read_header(*c->plain, c->buffer, *parser, kTuple);
    if (ec) co_return io_error(ec, "reading a response from", config_.authority());
    StreamResponse out;
    out.status = static_cast<int>(parser->get().result_int());
    out.headers = headers_of(parser->get().base());
    auto body = std::make_unique<StreamedBody>(std::move(c), std::move(parser), config_.authority());
    if (out.status / 100 != 2) {
      // Read the error body whole.
      for (;;) {
        auto piece = co_await body->read(timeout);
        if (!piece) co_return piece.error();
        if (piece->empty()) break;
        out.body += *piece;
      }
      body->close();
    } else {
      out.stream = std::move(body);
    }
    co_return out;
  }

 private:
  Result<void> make_context(const std::string& cert_pem, const std::string& key_pem) {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    boost::system::error_code ec;
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                     ssl::context::no_tlsv1_1);
    if (!config_.ca_pem.empty()) {
      ctx->add_certificate_authority(asio::buffer(config_.ca_pem), ec);
      if (ec)
        return Error::config(fmt::format("{}: the certificate authority is not a valid PEM certificate: {}", config_.source, ec.message()));
    } else {
      ctx->set_default_verify_paths(ec);
    }
    if (!cert_pem.empty()) {
      ctx->use_certificate_chain(asio::buffer(cert_pem), ec);
      if (ec) return Error::config(fmt::format("{}: the client certificate is not valid PEM: {}", config_.source, ec.message()));
      ctx->use_private_key(asio::buffer(key_pem), ssl::context::pem, ec);
      if (ec) return Error::config(fmt::format("{}: the client key is not valid PEM or does not match: {}", config_.source, ec.message()));
    }
    ssl_ = std::move(ctx);
    return {};
  }

  asio::awaitable<Result<std::unique_ptr<Connection>>> connection(Duration timeout, bool allow_reuse) {
    if (allow_reuse && !idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      c->reused = true;
      co_return c;
    }
    auto c = std::make_unique<Connection>();
    tcp::resolver resolver(ex_);
    auto [rec, endpoints] = co_await resolver.async_resolve(config_.host, std::to_string(config_.port), kTuple);
    if (rec) co_return Error::network(fmt::format("resolving {}: {}", config_.host, rec.message()));
    beast::tcp_stream stream(ex_);
    stream.expires_after(timeout);
    auto [cec, ep] = co_await stream.async_connect(endpoints, kTuple);
    if (cec) co_return io_error(cec, "connecting to", config_.authority());
    stream.socket().set_option(tcp::no_delay(true));
    if (!config_.tls()) {
      c->plain = std::make_unique<beast::tcp_stream>(std::move(stream));
      co_return c;
    }
    auto ssl_ctx = ssl_;
    c->secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(std::move(stream), *ssl_ctx);
    auto& s = *c->secure;
    std::string verify_name = config_.tls_server_name.empty() ? config_.host : config_.tls_server_name;
    if (!is_ip_address(verify_name)) SSL_set_tlsext_host_name(s.native_handle(), verify_name.c_str());
    auto failure = std::make_shared<std::string>();
    if (config_.insecure_skip_tls_verify) {
      s.set_verify_mode(ssl::verify_none);
    } else {
      s.set_verify_mode(ssl::verify_peer);
      s.set_verify_callback([verify_name, failure](bool preverified, ssl::verify_context& vc) {
        X509_STORE_CTX* store = vc.native_handle();
        if (!preverified) {
          *failure = X509_verify_cert_error_string(X509_STORE_CTX_get_error(store));
          return false;
        }
        if (X509_STORE_CTX_get_error_depth(store) == 0 && !ssl::host_name_verification(verify_name)(preverified, vc)) {
          *failure = fmt::format("the certificate is not valid for \"{}\" (hostname mismatch)", verify_name);
          return false;
        }
        return true;
      });
    }
    beast::get_lowest_layer(s).expires_after(timeout);
    auto [hec] = co_await s.async_handshake(ssl::stream_base::client, kTuple);
    if (hec) {
      if (!failure->empty())
        co_return Error::tls(fmt::format("TLS handshake with {} failed: certificate verify failed: {}", config_.authority(), *failure));
      co_return Error::tls(fmt::format("TLS handshake with {} failed: {}", config_.authority(), hec.message()));
    }
    co_return c;
  }

  template <class Stream>
  asio::awaitable<Result<HttpResponse>> exchange(Connection& c, Stream& stream, const Request& req, Duration timeout, bool& keep_alive) {
    auto breq = to_beast<Stream>(req, host_header_);
    c.tcp().expires_after(timeout);
    auto [wec, wn] = co_await http::async_write(stream, breq, kTuple);
    if (wec) co_return io_error(wec, "sending a request to", config_.authority());
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_body_bytes);
    auto [rec, rn] = co_await http::async_read(stream, c.buffer, parser, kTuple);
    if (rec) co_return io_error(rec, "reading a response from", config_.authority());
    auto& res = parser.get();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    out.headers = headers_of(res.base());
    out.body = std::move(res.body());
    keep_alive = res.keep_alive();
    co_return out;
  }

  asio::any_io_executor ex_;
  ClientConfig config_;
  TransportOptions options_;
  std::string host_header_;
  std::shared_ptr<ssl::context> ssl_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace

Result<std::shared_ptr<Transport>> make_http_transport(asio::any_io_executor executor, const ClientConfig& config,
                                                       TransportOptions options) {
  auto t = std::make_shared<HttpTransport>(std::move(executor), config, options);
  if (auto r = t->init(); !r) return r.error();
  return std::shared_ptr<Transport>(t);
}

}  // namespace spotshift::kube
