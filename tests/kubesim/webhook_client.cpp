// The HTTPS client kubesim calls admission webhooks with (the one Beast translation unit of the
// webhook support): a blocking POST on an io_context of its own, bounded by the webhook's timeout.

#include "webhooks.hpp"

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace spotshift::kubesim {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

Result<std::string> post_webhook(const std::string& url, const std::string& ca_pem, const std::string& body,
                                 std::chrono::milliseconds timeout) {
  constexpr std::string_view kScheme = "https://";
  if (!std::string_view(url).starts_with(kScheme)) return Error::invalid(fmt::format("webhook URL {} is not https", url));
  std::string rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  const std::string target = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string authority = rest.substr(0, slash);
  std::string host = authority, port = "443";
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else if (const size_t colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }

  // Declared before the io_context: a call cut off at the deadline is destroyed with it.
  Result<std::string> out = Error::timeout(fmt::format("Post \"{}\": context deadline exceeded", url));
  asio::io_context ioc;
  ssl::context ctx(ssl::context::tls_client);
  boost::system::error_code ec;
  if (ca_pem.empty()) ctx.set_default_verify_paths(ec);
  else ctx.add_certificate_authority(asio::buffer(ca_pem), ec);
  if (ec) return Error::tls(fmt::format("caBundle: {}", ec.message()));
  ctx.set_verify_mode(ssl::verify_peer);

  auto call = [&]() -> asio::awaitable<void> {
    auto fail = [&](std::string_view what, const boost::system::error_code& e) {
      out = Error::network(fmt::format("Post \"{}\": {}: {}", url, what, e.message()));
    };
    tcp::resolver resolver(ioc);
    auto [rec, endpoints] = co_await resolver.async_resolve(host, port, asio::as_tuple(asio::use_awaitable));
    if (rec) co_return fail("resolve", rec);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    beast::get_lowest_layer(stream).expires_after(timeout);
    auto [cec, ep] = co_await beast::get_lowest_layer(stream).async_connect(endpoints, asio::as_tuple(asio::use_awaitable));
    if (cec) co_return fail("dial tcp", cec);
    boost::system::error_code ip_ec;
    asio::ip::make_address(host, ip_ec);
    if (ip_ec) SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());
    stream.set_verify_callback(ssl::host_name_verification(host));
    auto [hec] = co_await stream.async_handshake(ssl::stream_base::client, asio::as_tuple(asio::use_awaitable));
    if (hec) co_return fail("tls", hec);
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, authority);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json");
    req.body() = body;
    req.prepare_payload();
    auto [wec, wn] = co_await http::async_write(stream, req, asio::as_tuple(asio::use_awaitable));
    if (wec) co_return fail("write", wec);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    auto [rdec, rn] = co_await http::async_read(stream, buffer, res, asio::as_tuple(asio::use_awaitable));
    if (rdec) co_return fail("read", rdec);
    if (res.result_int() != 200)
      out = Error::network(fmt::format("the server responded with {} to Post \"{}\": {}", res.result_int(), url, res.body()));
    else out = std::move(res.body());
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(1));
    co_await stream.async_shutdown(asio::as_tuple(asio::use_awaitable));
  };
  asio::co_spawn(ioc, call, asio::detached);
  ioc.run_for(timeout + std::chrono::seconds(1));
  return out;
}

}  // namespace spotshift::kubesim
