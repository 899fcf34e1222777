#include "run.hpp"

#include "core/flags.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "kube/config.hpp"
#include "rebalancer.hpp"
#include "runtime/events.hpp"
#include "runtime/informer.hpp"
#include "runtime/leader.hpp"
#include "runtime/manager.hpp"
#include "runtime/telemetry.hpp"
#include "version.hpp"
#include "webhook.hpp"

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <tuple>

namespace spotshift::op {

namespace asio = boost::asio;

namespace {

const log::Logger logger("spotshift");

struct RunFlags {
  std::string kubeconfig;
  std::string context;
  bool leader_elect = false;
  std::string leader_namespace;
  std::string lease_name = "spotshift";
  std::string metrics_address = ":8080";
  std::string probe_address = ":8081";
  std::string log_format = "text";
  int verbosity = 0;
  int workers = 4;
  int qps = 20;
  int burst = 40;
  int max_planning_cpu = 50;
  bool watch_volumes = true;
  std::string lease_duration = "15s";
  std::string renew_deadline = "10s";
  std::string retry_period = "2s";
  std::string webhook_address = "0";
  std::string webhook_secret;
  std::string webhook_configuration;
  std::string webhook_dns_names;
  std::string webhook_ip_addresses;
  std::string webhook_cert_dir;
  std::string webhook_leader_pod;
};

// "namespace/name", split; nothing unless both parts are there.
std::optional<std::pair<std::string, std::string>> namespaced_name(std::string_view v) {
  const size_t slash = v.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == v.size() || v.find('/', slash + 1) != std::string_view::npos)
    return std::nullopt;
  return std::pair{std::string(v.substr(0, slash)), std::string(v.substr(slash + 1))};
}

std::vector<std::string> list_flag(std::string_view v) {
  std::vector<std::string> out;
  for (auto part : split(v, ','))
    if (auto t = trim(part); !t.empty()) out.emplace_back(t);
  return out;
}

std::string check_duration(const std::string& v) {
  auto d = parse_go_duration(v);
  if (!d) return "must be a duration such as 15s";
  if (*d <= Duration::zero()) return "must be positive";
  return "";
}

std::string check_bind(const std::string& v) {
  auto r = runtime::parse_bind_address(v);
  return r ? "" : r.error().message;
}

std::string in_cluster_namespace() {
  auto ns = read_file(kube::InClusterPaths{}.ns);
  return ns ? std::string(trim(*ns)) : "";
}

// Enqueues every policy when an object changes in a way a plan could notice.
template <class T>
void trigger_all(runtime::Informer<T>& informer, runtime::WorkQueue& queue, SpotRebalancer& rebalancer) {
  informer.on_event([&queue, &rebalancer](const runtime::ObjectEvent<T>& e) {
    if (e.resync || !runtime::content_changed(e)) return;
    for (const auto& key : rebalancer.policy_keys()) queue.add(key);
  });
}

}  // namespace

int run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RunFlags f;
  f.leader_elect = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  FlagSet flags("spotshift run",
                "Runs the operator: watches ReschedulePolicies, nodes, pods and PodDisruptionBudgets, and moves the pods of\n"
                "on-demand nodes onto spot nodes when every one of them fits.");
  flags.add_string("kubeconfig", &f.kubeconfig,
                   "Path to a kubeconfig. Default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config.");
  flags.add_string("context", &f.context, "The kubeconfig context to use (default: its current-context).");
  flags.add_bool("leader-elect", &f.leader_elect,
                 "Elect a leader among replicas with a coordination.k8s.io Lease (default true in a cluster, false outside).");
  flags.add_string("leader-election-namespace", &f.leader_namespace,
                   "Namespace of the Lease (default: the pod's own namespace in a cluster, else default).");
  flags.add_string("lease-name", &f.lease_name, "Name of the Lease.");
  flags.add_checked("leader-elect-lease-duration", &f.lease_duration, "How long followers wait after the last renewal before taking over.",
                    check_duration);
  flags.add_checked("leader-elect-renew-deadline", &f.renew_deadline, "How long the leader keeps trying to renew before it gives up.",
                    check_duration);
  flags.add_checked("leader-elect-retry-period", &f.retry_period, "How often candidates try to acquire or renew the Lease.",
                    check_duration);
  flags.add_checked("metrics-bind-address", &f.metrics_address, "Where to serve /metrics; 0 turns it off.", check_bind);
  flags.add_checked("health-probe-bind-address", &f.probe_address, "Where to serve /healthz and /readyz; 0 turns it off.", check_bind);
  flags.add_checked("log-format", &f.log_format, "Log format: text or json.",
                    [](const std::string& v) { return log::parse_format(v) ? "" : std::string("must be text or json"); });
  flags.add_int("v", &f.verbosity, "Log verbosity: 0 (info) to 5 (every request).");
  flags.add_int("workers", &f.workers, "Policies reconciled at the same time.");
  flags.add_int("kube-api-qps", &f.qps,
                "Requests per second to the API server (client-side limit). Events and leader election each have a budget of "
                "the same size of their own, so events never hold back status writes or evictions, and nothing holds back a "
                "lease renewal.");
  flags.add_int("kube-api-burst", &f.burst, "Burst above the QPS limit (for each budget).");
  flags.add_int("max-planning-cpu", &f.max_planning_cpu,
                "The most of one CPU core planning may take, in percent (1 to 100): after a plan that took d, the next waits "
                "until d * (100 / percent - 1) has passed.");
  flags.add_bool("watch-volumes", &f.watch_volumes,
                 "Watch PersistentVolumeClaims and PersistentVolumes so VolumeZone keeps pods with zonal volumes in their zone.");
  flags.add_checked("webhook-bind-address", &f.webhook_address,
                    "Where to serve the steering webhook (HTTPS, path /mutate-pods) for policies with spec.steering Preferred; "
                    "0 (the default) turns it off.",
                    check_bind);
  flags.add_string("webhook-secret", &f.webhook_secret,
                   "namespace/name of the Secret keeping the webhook's generated CA and serving certificate (default: the "
                   "pod's namespace, spotshift-webhook-tls).");
  flags.add_string("webhook-configuration", &f.webhook_configuration,
                   "The MutatingWebhookConfiguration whose caBundle the operator keeps current (empty: left alone).");
  flags.add_string("webhook-dns-names", &f.webhook_dns_names, "Comma-separated DNS names of the serving certificate (the Service's).");
  flags.add_string("webhook-ip-addresses", &f.webhook_ip_addresses, "Comma-separated IP addresses of the serving certificate.");
  flags.add_string("webhook-leader-pod", &f.webhook_leader_pod,
                   "namespace/name of this replica's own pod: labelled spotshift.io/webhook-leader=true while it leads, for the "
                   "webhook Service to select (the chart passes $(POD_NAMESPACE)/$(POD_NAME)).");
  flags.add_string("webhook-cert-dir", &f.webhook_cert_dir,
                   "Read the serving certificate from tls.crt and tls.key in this directory (cert-manager's Secret, mounted) "
                   "instead of generating one.");
  if (auto stop = flags.parse_command(args, out, err)) return *stop;
  if (f.verbosity < 0 || f.workers < 1 || f.qps < 0 || f.burst < 1) {
    err << "error: -v, --kube-api-qps must be at least 0 and --workers, --kube-api-burst at least 1\n";
    return 2;
  }
  if (f.max_planning_cpu < 1 || f.max_planning_cpu > 100) {
    err << "error: --max-planning-cpu must be a percentage from 1 to 100, not " << f.max_planning_cpu << "\n";
    return 2;
  }
  log::configure(*log::parse_format(f.log_format), f.verbosity);

  auto config = kube::load_config(f.kubeconfig, f.context);
  if (!config) {
    logger.error("cannot find the API server", {{"error", config.error()}});
    return 1;
  }
  boost::asio::io_context ioc(1);
  runtime::Metrics metrics;
  metrics.set_build_info(std::string(kVersion), std::string(kRevision));
  auto& api_requests = metrics.family(runtime::telemetry::kApiRequests);
  auto& api_waits = metrics.family(runtime::telemetry::kApiRateLimitWait);
  // Each client has its own rate limit: events must never spend the controller's budget, and
  // nothing may hold back a lease renewal (controller-runtime's recorder and leader election have
  // clients of their own for the same reasons).
  const std::string identity = runtime::default_identity();
  auto client_options = [&](std::string name) {
    kube::ClientOptions co;
    co.qps = f.qps;
    co.burst = f.burst;
    co.user_agent = fmt::format("spotshift/{} ({})", kVersion, identity);
    co.on_request = [&waits = api_waits.with({name})](Duration wait) { waits.inc(std::chrono::duration<double>(wait).count()); };
    co.on_response = [&api_requests, name](int code) { api_requests.with({name, code ? std::to_string(code) : "<error>"}).inc(); };
    return co;
  };
  auto client = kube::Client::create(ioc.get_executor(), *config, client_options("controller"));
  if (!client) {
    logger.error("cannot create the API client", {{"error", client.error()}});
    return 1;
  }
  auto event_client = (*client)->sibling(client_options("events"));
  auto leader_client = (*client)->sibling(client_options("leader-election"));
  logger.info("starting", {{"version", kVersion}, {"server", config->server}, {"config", config->source}, {"leaderElect", f.leader_elect}});

  runtime::Timers timers(ioc.get_executor(), SystemClock::instance());

  runtime::Informer<model::Node> nodes("nodes", *client, timers, {});
  runtime::Informer<model::Pod> pods("pods", *client, timers, {});
  runtime::Informer<model::PodDisruptionBudget> pdbs("poddisruptionbudgets", *client, timers, {});
  runtime::Informer<drain::ReschedulePolicy> policies("reschedulepolicies", *client, timers, {});
  runtime::Informer<NamespaceInfo> namespaces("namespaces", *client, timers, {});
  runtime::Informer<ReplicaSetInfo> replicasets("replicasets", *client, timers, {});
  runtime::Informer<StatefulSetInfo> statefulsets("statefulsets", *client, timers, {});
  runtime::Informer<JobInfo> jobs("jobs", *client, timers, {});
  runtime::Informer<model::PersistentVolumeClaim> claims("persistentvolumeclaims", *client, timers, {});
  runtime::Informer<model::PersistentVolume> volumes("persistentvolumes", *client, timers, {});

  runtime::EventRecorderOptions eo;
  eo.reporting_instance = identity;
  runtime::EventRecorder events(event_client, timers, eo);

  // The operator's own namespace: the Lease's and the webhook Secret's default.
  std::string own_namespace =
      !f.leader_namespace.empty() ? f.leader_namespace : (config->source == "in-cluster" ? in_cluster_namespace() : "default");
  if (own_namespace.empty()) own_namespace = "default";
  drain::SteeringBook steering;
  drain::SteeringBook* steering_book = nullptr;
  std::unique_ptr<WebhookServer> webhook;
  if (auto address = runtime::parse_bind_address(f.webhook_address); !address->disabled) {
    WebhookOptions wo;
    wo.address = *address;
    std::string secret = !f.webhook_secret.empty() ? f.webhook_secret : fmt::format("{}/spotshift-webhook-tls", own_namespace);
    auto secret_name = namespaced_name(secret);
    if (!secret_name) {
      err << "error: --webhook-secret must be namespace/name, not \"" << secret << "\"\n";
      return 2;
    }
    std::tie(wo.secret_namespace, wo.secret_name) = *secret_name;
    wo.configuration = f.webhook_configuration;
    wo.dns_names = list_flag(f.webhook_dns_names);
    wo.ip_addresses = list_flag(f.webhook_ip_addresses);
    wo.cert_dir = f.webhook_cert_dir;
    if (!f.webhook_leader_pod.empty()) {
      auto pod = namespaced_name(f.webhook_leader_pod);
      if (!pod) {
        err << "error: --webhook-leader-pod must be namespace/name, not \"" << f.webhook_leader_pod << "\"\n";
        return 2;
      }
      std::tie(wo.pod_namespace, wo.pod_name) = *pod;
    }
    if (wo.cert_dir.empty() && wo.dns_names.empty() && wo.ip_addresses.empty()) {
      err << "error: --webhook-bind-address needs --webhook-dns-names or --webhook-ip-addresses (the names the API server "
             "calls the webhook by), or --webhook-cert-dir\n";
      return 2;
    }
    webhook = std::make_unique<WebhookServer>(ioc.get_executor(), *client, timers, steering, metrics, wo);
    auto port = webhook->listen();
    if (!port) {
      logger.error("cannot serve the steering webhook", {{"error", port.error()}});
      return 1;
    }
    logger.info("serving the steering webhook", {{"address", fmt::format("{}:{}", wo.address.host, *port)}, {"path", kWebhookPath}});
    steering_book = &steering;
  }
  RebalancerOptions ro;
  ro.steering = steering_book;
  ro.max_planning_cpu_percent = f.max_planning_cpu;
  if (f.watch_volumes) {
    ro.volumes = [&claims, &volumes] {
      std::vector<const model::PersistentVolumeClaim*> c;
      std::vector<const model::PersistentVolume*> v;
      claims.store().for_each([&](const auto& p) { c.push_back(p.get()); });
      volumes.store().for_each([&](const auto& p) { v.push_back(p.get()); });
      return model::volume_node_requirements(c, v);
    };
  }
  ro.owners = [&replicasets, &statefulsets, &jobs](const model::Pod& pod) {
    return drain::owner_info(
        pod,
        [&](std::string_view kind, const std::string& key) -> std::shared_ptr<const model::WorkloadController> {
          if (kind == "ReplicaSet") return replicasets.store().get(key);
          if (kind == "StatefulSet") return statefulsets.store().get(key);
          return jobs.store().get(key);
        },
        model::watched_controller_kind);
  };
  runtime::WorkQueue queue(timers);
  ro.enqueue = [&queue](const std::string& policy) { queue.add(policy); };
  SpotRebalancer rebalancer(*client, timers,
                            RebalancerStores{nodes.store(), pods.store(), pdbs.store(), policies.store(), namespaces.store()}, events,
                            metrics, ro);
  runtime::Controller controller("spotrebalancer", rebalancer, queue, timers, {f.workers, Duration::zero()});
  auto& reconciles = metrics.family(runtime::telemetry::kReconciles);
  auto& reconcile_duration = metrics.family(runtime::telemetry::kReconcileDuration);
  auto& depth = metrics.family(runtime::telemetry::kWorkqueueDepth);
  controller.observer = [&](Duration took, std::string_view result) {
    reconciles.with({std::string(result)}).inc();
    reconcile_duration.get().observe(std::chrono::duration<double>(took).count());
    depth.get().set(static_cast<double>(queue.len()));
  };
  policies.on_event([&queue](const runtime::ObjectEvent<drain::ReschedulePolicy>& e) {
    if (runtime::content_changed(e)) queue.add(e.object->meta.key());
  });
  trigger_all(nodes, queue, rebalancer);
  trigger_all(pods, queue, rebalancer);
  trigger_all(pdbs, queue, rebalancer);
  trigger_all(namespaces, queue, rebalancer);
  trigger_all(replicasets, queue, rebalancer);
  trigger_all(statefulsets, queue, rebalancer);
  trigger_all(jobs, queue, rebalancer);
  if (f.watch_volumes) {
    trigger_all(claims, queue, rebalancer);
    trigger_all(volumes, queue, rebalancer);
  }

  runtime::ManagerOptions mo;
  mo.leader_elect = f.leader_elect;
  mo.leader.name = f.lease_name;
  mo.leader.namespace_ = own_namespace;
  mo.leader.identity = identity;
  mo.leader.lease_duration = *parse_go_duration(f.lease_duration);
  mo.leader.renew_deadline = *parse_go_duration(f.renew_deadline);
  mo.leader.retry_period = *parse_go_duration(f.retry_period);
  if (auto v = mo.leader.validate(); f.leader_elect && !v) {
    err << "error: " << v.error().message << "\n";
    return 2;
  }
  mo.metrics_address = f.metrics_address;
  mo.probe_address = f.probe_address;
  runtime::Manager manager(ioc.get_executor(), leader_client, timers, metrics, mo);
  manager.add_informer(nodes);
  manager.add_informer(pods);
  manager.add_informer(pdbs);
  manager.add_informer(policies);
  manager.add_informer(namespaces);
  manager.add_informer(replicasets);
  manager.add_informer(statefulsets);
  manager.add_informer(jobs);
  if (f.watch_volumes) {
    manager.add_informer(claims);
    manager.add_informer(volumes);
  }
  manager.add_runnable(
      "event recorder", [&events] { return events.run(); }, [&events] { events.stop(); });
  if (webhook)
    manager.add_runnable(
        "steering webhook", [&webhook] { return webhook->run(); }, [&webhook] { webhook->stop(); });
  manager.on_leading([&rebalancer, &queue, &webhook]() -> asio::awaitable<void> {
    if (webhook) co_await webhook->label_leader(true);
    co_await rebalancer.recover();
    for (const auto& key : rebalancer.policy_keys()) queue.add(key);
  });
  manager.on_stopping([&rebalancer] { rebalancer.stop_all(); });
  manager.add_controller(controller);
  manager.add_tasks(rebalancer.tasks());

  int code = 1;
  bool done = false;
  boost::asio::co_spawn(
      ioc, [&]() -> asio::awaitable<void> { code = co_await manager.run(); },
      [&](std::exception_ptr e) {
        done = true;
        if (!e) return;
        runtime::log_exception("manager", e);
        ioc.stop();
      });
  while (!done && !ioc.stopped()) ioc.run_one();
  // The manager told every part to stop; their coroutines (a cancelled watch or request, a
  // status write) finish in a moment. Let them, before anything they point to is destroyed:
  // handlers still queued when the io_context goes would run their destructors against the
  // informers, the client and the rebalancer, already gone (a use after free at exit).
  const auto grace = std::chrono::seconds(5);
  ioc.run_for(grace);
  if (!ioc.stopped()) {
    // Something did not stop. Destroying what it points to would be unsafe: leave without it.
    logger.warn("work still pending after the shutdown grace period; exiting without cleanup", {{"grace", Duration(grace)}});
    logger.info("stopped", {{"exitCode", code}});
    std::fflush(nullptr);
    std::_Exit(code);
  }
  logger.info("stopped", {{"exitCode", code}});
  return code;
}

}  // namespace spotshift::op
