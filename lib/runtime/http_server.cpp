#include "runtime/http_server.hpp"

#include "runtime/spawn.hpp"

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace spotshift::runtime {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpServer::Impl {
  asio::any_io_executor executor;
  RequestHandler handler;
  bool any_method = false;
  TlsSource tls;
  // The context built from the material last read, and that material (rebuilt when it changes).
  std::shared_ptr<asio::ssl::context> ssl;
  TlsMaterial ssl_material;
  std::optional<tcp::acceptor> acceptor;
  bool stopped = false;

  std::shared_ptr<asio::ssl::context> context() {
    TlsMaterial m = tls();
    if (m.cert_pem.empty() || m.key_pem.empty()) return nullptr;
    if (ssl && m.cert_pem == ssl_material.cert_pem && m.key_pem == ssl_material.key_pem) return ssl;
    auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
    ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                     asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    boost::system::error_code ec;
    ctx->use_certificate_chain(asio::buffer(m.cert_pem), ec);
    if (!ec) ctx->use_private_key(asio::buffer(m.key_pem), asio::ssl::context::pem, ec);
    if (ec) return nullptr;
    ssl = std::move(ctx);
    ssl_material = std::move(m);
    return ssl;
  }

  template <class Stream>
  asio::awaitable<void> serve(Stream& stream) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(any_method ? 3 * 1024 * 1024 : 64 * 1024);
      beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      auto& req = parser.get();
      HttpReply reply;
      if (!any_method && req.method() != http::verb::get && req.method() != http::verb::head) {
        reply = {405, "text/plain; charset=utf-8", "method not allowed\n"};
      } else {
        std::string_view target = req.target();
        const size_t q = target.find('?');
        HttpRequestView view{req.method_string(), target.substr(0, q), q == std::string_view::npos ? "" : target.substr(q + 1),
                             req[http::field::content_type], req.body()};
        reply = handler(view);
      }
      http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
      res.set(http::field::content_type, reply.content_type);
      res.keep_alive(req.keep_alive());
      res.body() = std::move(reply.body);
      res.prepare_payload();
      auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
      if (wec || !res.keep_alive()) co_return;
    }
  }

  asio::awaitable<void> session(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    if (!tls) {
      co_await serve(stream);
      beast::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      co_return;
    }
    auto ctx = context();
    if (!ctx) co_return;  // no certificate yet
    beast::ssl_stream<beast::tcp_stream> secure(std::move(stream), *ctx);
    beast::get_lowest_layer(secure).expires_after(std::chrono::seconds(10));
    auto [hec] = co_await secure.async_handshake(asio::ssl::stream_base::server, asio::as_tuple(asio::use_awaitable));
    if (hec) co_return;
    co_await serve(secure);
    beast::get_lowest_layer(secure).expires_after(std::chrono::seconds(5));
    co_await secure.async_shutdown(asio::as_tuple(asio::use_awaitable));  // a peer that just closes is fine
  }
};

HttpServer::HttpServer(asio::any_io_executor executor, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->executor = std::move(executor);
  impl_->handler = [handler = std::move(handler)](const HttpRequestView& r) { return handler(r.path); };
}

HttpServer::HttpServer(asio::any_io_executor executor, RequestHandler handler, TlsSource tls) : impl_(std::make_unique<Impl>()) {
  impl_->executor = std::move(executor);
  impl_->handler = std::move(handler);
  impl_->any_method = true;
  impl_->tls = std::move(tls);
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
