#include "live_plan.hpp"

#include "kube/client.hpp"
#include "kube/config.hpp"
#include "resources.hpp"
#include "version.hpp"

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

namespace spotshift::op {

namespace asio = boost::asio;

namespace {

struct Listed {
  const kube::Resource* resource;
  bool required;    // the plan means nothing without it
  bool controller;  // a controller kind: listed whole, a missing controller means none
};

// A resource the credentials may not list, or that the cluster does not serve.
bool left_out(const Error& e) { return e.kind == ErrorKind::kApi && (e.code == 403 || e.code == 404); }

asio::awaitable<Result<ClusterRead>> list_cluster(kube::Client& client) {
  const Listed kinds[] = {
      {&kube::Resource::nodes(), true, false},
      {&kube::Resource::pods(), true, false},
      {&kube::Resource::pod_disruption_budgets(), true, false},
      {&kube::Resource::namespaces(), false, false},
      {&kube::Resource::persistent_volume_claims(), false, false},
      {&kube::Resource::persistent_volumes(), false, false},
      {&controller_resource<'r'>(), false, true},
      {&controller_resource<'s'>(), false, true},
      {&controller_resource<'j'>(), false, true},
  };
  SnapshotBuilder builder;
  // Named, not a temporary in the co_await expression: GCC 12 mishandles those.
  const kube::ListOptions all;
  for (const auto& k : kinds) {
    // Items of a list carry no kind: each is read as the list's.
    Result<void> first_error{};
    auto rv = co_await client.list_each(*k.resource, "", all, [&](model::JsonReader& item) {
      if (auto done = builder.add(k.resource->kind, item); !done && first_error) first_error = done.error();
    });
    if (!rv && !k.required && left_out(rv.error())) {
      builder.warn(fmt::format("{} left out: {}", k.resource->plural, rv.error().message));
      continue;
    }
    if (!rv) co_return rv.error().wrap(fmt::format("listing {}", k.resource->plural));
    if (!first_error) co_return first_error.error().wrap(fmt::format("listing {}", k.resource->plural));
    if (k.controller) builder.listed_all(k.resource->kind);
  }
  ClusterRead out;
  std::vector<Error> undecodable;
  auto rv = co_await client.list_each(policy_resource(), "", all, [&](model::JsonReader& item) {
    if (auto p = drain::decode_policy(item)) out.policies.push_back(std::move(*p));
    else undecodable.push_back(p.error());
  });
  if (!rv && !left_out(rv.error())) co_return rv.error().wrap("listing reschedulepolicies");
  if (!rv) builder.warn(fmt::format("reschedulepolicies left out: {}", rv.error().message));
  for (const auto& e : undecodable) builder.warn(fmt::format("skipped a ReschedulePolicy: {}", e.message));
  // The ConfigMaps the policies take prices from (spec.pricing.configMap), each read with a get.
  std::map<std::string, std::map<std::string, std::string>> config_maps;
  for (const auto& p : out.policies) {
    if (!p.spec || !p.spec->pricing || !p.spec->pricing->from_config_map()) continue;
    const auto& pricing = *p.spec->pricing;
    const std::string key = fmt::format("{}/{}", pricing.config_map_namespace, pricing.config_map_name);
    if (config_maps.count(key)) continue;
    auto body = co_await client.get(kube::Resource::config_maps(), pricing.config_map_namespace, pricing.config_map_name);
    if (!body) {
      builder.warn(fmt::format("ConfigMap {} left out: {}", key, body.error().message));
      continue;
    }
    if (auto data = drain::config_map_data(*body)) config_maps[key] = std::move(*data);
    else builder.warn(fmt::format("ConfigMap {} left out: {}", key, data.error().message));
  }
  auto snap = std::move(builder).finish();
  if (!snap) co_return Error::invalid(fmt::format("the cluster has {}", snap.error().message));
  out.snapshot = std::move(*snap);
  out.snapshot.config_maps.merge(config_maps);
  co_return out;
}

}  // namespace

Result<ClusterRead> read_cluster(const LiveOptions& options) {
  auto config = kube::load_config(options.kubeconfig, options.context);
  if (!config) return config.error();
  asio::io_context ioc(1);
  kube::ClientOptions co;
  co.user_agent = fmt::format("spotshift/{} plan", kVersion);
  auto client = kube::Client::create(ioc.get_executor(), *config, co);
  if (!client) return client.error();
  Result<ClusterRead> result = Error::internal("the cluster was not read");
  asio::co_spawn(
      ioc, [&]() -> asio::awaitable<void> { result = co_await list_cluster(**client); }, asio::detached);
  ioc.run();
  return result;
}

}  // namespace spotshift::op
