#pragma once
// The product's own client for a kubesim running in this process (plain HTTP, no rate limit):
// what the in-process tests and benchmarks talk to kubesim with.

#include "kube/client.hpp"
#include "simulator.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>

namespace spotshift::testing {

inline Result<std::shared_ptr<kube::Client>> sim_client(boost::asio::io_context& ioc, const kubesim::Simulator& sim,
                                                        std::string user_agent) {
  kube::ClientConfig c;
  c.server = sim.url();
  if (auto r = kube::parse_server(c); !r) return r.error();
  kube::ClientOptions o;
  o.qps = 0;
  o.user_agent = std::move(user_agent);
  return kube::Client::create(ioc.get_executor(), c, o);
}

}  // namespace spotshift::testing
