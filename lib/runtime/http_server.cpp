#include "runtime/http_server.hpp"

#include "runtime/spawn.hpp"

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace spotshift::runtime {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpServer::Impl {
  asio::any_io_executor executor;
  Handler handler;
  std::optional<tcp::acceptor> acceptor;
  bool stopped = false;

  asio::awaitable<void> session(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> req;
      stream.expires_after(std::chrono::seconds(30));
      auto [ec, n] = co_await http::async_read(stream, buffer, req, asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      HttpReply reply;
      if (req.method() != http::verb::get && req.method() != http::verb::head) {
        reply = {405, "text/plain; charset=utf-8", "method not allowed\n"};
      } else {
        std::string_view target = req.target();
        reply = handler(target.substr(0, target.find('?')));
      }
      http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
      res.set(http::field::content_type, reply.content_type);
      res.keep_alive(req.keep_alive());
      res.body() = std::move(reply.body);
      res.prepare_payload();
      auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
      if (wec || !res.keep_alive()) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }
};

HttpServer::HttpServer(asio::any_io_executor executor, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->executor = std::move(executor);
  impl_->handler = std::move(handler);
}

HttpServer::~HttpServer() = default;

Result<uint16_t> HttpServer::listen(const BindAddress& address) {
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(address.host, ec);
  if (ec) return Error::invalid(fmt::format("invalid listen address \"{}\"", address.host));
  tcp::endpoint ep(ip, address.port);
  impl_->acceptor.emplace(impl_->executor);
  impl_->acceptor->open(ep.protocol(), ec);
  if (!ec) impl_->acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor->bind(ep, ec);
  if (!ec) impl_->acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error::network(fmt::format("cannot listen on {}:{}: {}", address.host, address.port, ec.message()));
  return impl_->acceptor->local_endpoint().port();
}

asio::awaitable<void> HttpServer::run() {
  while (!impl_->stopped && impl_->acceptor && impl_->acceptor->is_open()) {
    auto [ec, socket] = co_await impl_->acceptor->async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec) {
      if (impl_->stopped || ec == asio::error::operation_aborted) co_return;
      continue;
    }
    spawn(impl_->executor, impl_->session(std::move(socket)), "http session");
  }
}

void HttpServer::stop() {
  impl_->stopped = true;
  if (impl_->acceptor) {
    boost::system::error_code ec;
    impl_->acceptor->close(ec);
  }
}

}  // namespace spotshift::runtime
