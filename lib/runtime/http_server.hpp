#pragma once
// A small HTTP server for /metrics, /healthz and /readyz: GET only, one coroutine per connection.

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

class HttpServer {
 public:
  using Handler = std::function<HttpReply(std::string_view path)>;
  HttpServer(asio::any_io_executor executor, Handler handler);
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
