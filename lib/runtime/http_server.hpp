#pragma once
// A small HTTP(S) server, one coroutine per connection: GET only for /metrics, /healthz and
// /readyz; GET and POST over TLS for the admission webhook.

#include "core/error.hpp"
#include "runtime/metrics.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <string>

namespace spotshift::runtime {

namespace asio = boost::asio;

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct HttpRequestView {
  std::string_view method;  // "GET", "POST", ...
  std::string_view path;    // without the query
  std::string_view query;
  std::string_view content_type;
  std::string_view body;
};

// The serving certificate and key (PEM) for a TLS server, read again for every connection: a
// rotated certificate is used from the next connection on. Empty: not ready (the connection is
// closed).
struct TlsMaterial {
  std::string cert_pem;
  std::string key_pem;
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply(std::string_view path)>;
  using RequestHandler = std::function<HttpReply(const HttpRequestView&)>;
  using TlsSource = std::function<TlsMaterial()>;
  // GET and HEAD only, plain HTTP.
  HttpServer(asio::any_io_executor executor, Handler handler);
  // Every method, over TLS with the certificate `tls` gives; request bodies up to 3 MiB (what the
  // API server sends a webhook stays below it).
  HttpServer(asio::any_io_executor executor, RequestHandler handler, TlsSource tls);
  ~HttpServer();
  // Binds and listens; returns the port (useful with port 0).
  Result<uint16_t> listen(const BindAddress& address);
  asio::awaitable<void> run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotshift::runtime
