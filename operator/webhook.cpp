#include "webhook.hpp"

#include "core/log.hpp"
#include "core/strings.hpp"
#include "kube/certs.hpp"
#include "model/json.hpp"
#include "runtime/http_server.hpp"
#include "runtime/spawn.hpp"
#include "telemetry.hpp"

#include <fmt/format.h>

namespace spotshift::op {

namespace {

const log::Logger logger("webhook");

const kube::Resource& secrets() {
  static const kube::Resource r{"", "v1", "secrets", "Secret", true};
  return r;
}

const kube::Resource& webhook_configurations() {
  static const kube::Resource r{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
                                false};
  return r;
}

constexpr auto kCaValidity = std::chrono::hours(24 * 3650);
constexpr auto kCaRenewBefore = std::chrono::hours(24 * 365);
constexpr auto kServingValidity = std::chrono::hours(24 * 365);
constexpr auto kServingRenewBefore = std::chrono::hours(24 * 122);  // a third of a year

// What the Secret holds.
struct Material {
  kube::CertPair ca;
  kube::CertPair serving;
};

Result<Material> decode_secret(std::string_view json) {
  model::JsonDocument doc;
  if (auto parsed = model::parse_json(json, doc); !parsed) return parsed.error();
  Material m;
  std::string* fields[] = {&m.ca.cert_pem, &m.ca.key_pem, &m.serving.cert_pem, &m.serving.key_pem};
  const char* names[] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
  for (size_t i = 0; i < 4; ++i) {
    auto text = base64_decode(model::json_string(doc, {"data", names[i]}));
    if (!text || text->empty()) return Error::invalid(fmt::format("the Secret has no {}", names[i]));
    *fields[i] = std::move(*text);
  }
  return m;
}

std::string secret_body(const std::string& ns, const std::string& name, const Material& m, std::string_view resource_version) {
  std::string rv = resource_version.empty() ? "" : fmt::format(R"(,"resourceVersion":{})", json_quote(resource_version));
  return fmt::format(
      R"({{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/tls","metadata":{{"name":{},"namespace":{},)"
      R"("labels":{{"app.kubernetes.io/managed-by":"spotshift"}}{}}},"data":{{"ca.crt":"{}","ca.key":"{}","tls.crt":"{}","tls.key":"{}"}}}})",
      json_quote(name), json_quote(ns), rv, base64_encode(m.ca.cert_pem), base64_encode(m.ca.key_pem), base64_encode(m.serving.cert_pem),
      base64_encode(m.serving.key_pem));
}

// Why the material must be renewed at `now`, or empty when it is good.
std::string renewal_reason(const Material& m, const WebhookOptions& o, Time now) {
  auto ca = kube::CertificateAuthority::from_pair(m.ca);
  if (!ca) return fmt::format("the CA is not usable ({})", ca.error().message);
  auto ca_expiry = kube::certificate_expiry(m.ca.cert_pem);
  if (!ca_expiry || *ca_expiry - now < kCaRenewBefore) return "the CA expires within a year";
  if (auto ok = kube::check_server_certificate(m.serving, m.ca.cert_pem, o.dns_names, o.ip_addresses); !ok) return ok.error().message;
  auto expiry = kube::certificate_expiry(m.serving.cert_pem);
  if (!expiry || *expiry - now < kServingRenewBefore) return "the serving certificate expires within four months";
  return {};
}

}  // namespace

struct WebhookServer::Impl {
  asio::any_io_executor executor;
  std::shared_ptr<kube::Client> client;
  runtime::Timers& timers;
  drain::SteeringBook& book;
  runtime::Metrics& metrics;
  WebhookOptions options;
  runtime::TlsMaterial tls;
  std::string ca_pem;
  std::unique_ptr<runtime::HttpServer> server;
  runtime::Signal wake;
  runtime::Signal unlabel_done;
  bool unlabelled = false;  // the start's label_leader(false) is done
  bool stopped = false;
  bool warned_missing_configuration = false;
  bool configuration_missing = false;  // looked for again within seconds (a chart installs it with the operator)

  Impl(asio::any_io_executor ex, std::shared_ptr<kube::Client> c, runtime::Timers& t, drain::SteeringBook& b, runtime::Metrics& m,
       WebhookOptions o)
      : executor(ex), client(std::move(c)), timers(t), book(b), metrics(m), options(std::move(o)), wake(ex), unlabel_done(ex) {}

  runtime::HttpReply handle(const runtime::HttpRequestView& req) {
    auto& admissions = metrics.family(telemetry::kWebhookAdmissions);
    if (req.path != kWebhookPath) return {404, "text/plain; charset=utf-8", "not found\n"};
    if (req.method != "POST") return {405, "text/plain; charset=utf-8", "method not allowed: POST an AdmissionReview\n"};
    auto answer = drain::answer_admission(req.body, book, timers.now());
    if (!answer) {
      admissions.with({"error"}).inc();
      logger.warn("not an admission request", {{"error", answer.error()}});
      return {400, "text/plain; charset=utf-8", answer.error().message + "\n"};
    }
    if (answer->steer) {
      admissions.with({"steered"}).inc();
      logger.info("steered a replacement", {{"pod", answer->pod},
                                            {"node", answer->steer->target},
                                            {"replaces", fmt::format("{}/{}", answer->steer->ns, answer->steer->pod_name)},
                                            {"policy", answer->steer->policy}});
    } else {
      admissions.with({"untouched"}).inc();
      logger.debug(1, "let a pod through untouched (no steer for it)",
                   {{"pod", answer->pod}, {"controller", answer->controller}, {"steers", static_cast<int64_t>(book.size())}});
    }
    return {200, "application/json", std::move(answer->body)};
  }

  // Reads (or makes) the certificate; returns what to log when it failed.
  asio::awaitable<Result<void>> refresh_certificate() {
    if (!options.cert_dir.empty()) {
      auto cert = read_file(options.cert_dir + "/tls.crt");
      auto key = read_file(options.cert_dir + "/tls.key");
      if (!cert) co_return cert.error().wrap("the webhook's certificate");
      if (!key) co_return key.error().wrap("the webhook's key");
      tls = {*cert, *key};
      co_return ok();
    }
    const Time now = timers.now();
    auto body = co_await client->get(secrets(), options.secret_namespace, options.secret_name);
    if (!body && !body.error().is_not_found()) co_return body.error().wrap("reading the webhook's Secret");
    std::string resource_version;
    std::optional<Material> found, kept;  // what the Secret holds; that, when it is still good
    std::string why = "the Secret does not exist";
    if (body) {
      model::JsonDocument doc;
      if (model::parse_json(*body, doc)) resource_version = model::json_string(doc, {"metadata", "resourceVersion"});
      auto m = decode_secret(*body);
      if (!m) why = m.error().message;
      else found = std::move(*m);
      if (found && (why = renewal_reason(*found, options, now)).empty()) kept = found;
    }
    if (!kept) {
      Material m;
      // Keep a good CA: the webhook configuration's caBundle need not change for a new certificate.
      std::optional<kube::CertificateAuthority> ca;
      if (found) {
        auto expiry = kube::certificate_expiry(found->ca.cert_pem);
        if (auto c = kube::CertificateAuthority::from_pair(found->ca); c && expiry && *expiry - now >= kCaRenewBefore) ca = std::move(*c);
      }
      if (!ca) {
        auto made = kube::CertificateAuthority::create("spotshift-webhook-ca", kCaValidity);
        if (!made) co_return made.error().wrap("making the webhook's CA");
        ca = std::move(*made);
      }
      auto serving = ca->issue_server(options.dns_names, options.ip_addresses, kServingValidity);
      if (!serving) co_return serving.error().wrap("issuing the webhook's certificate");
      m.ca = ca->pair();
      m.serving = std::move(*serving);
      std::string text = secret_body(options.secret_namespace, options.secret_name, m, resource_version);
      // (No co_await inside ?: : GCC 12 destroys the result twice.)
      Result<std::string> written = Error::internal("not written");
      if (body) written = co_await client->update(secrets(), options.secret_namespace, options.secret_name, std::move(text));
      else written = co_await client->create(secrets(), options.secret_namespace, std::move(text));
      // Another replica wrote it first: use theirs at the next look, in a moment.
      if (!written && (written.error().is_conflict() || written.error().is_already_exists())) co_return written.error();
      if (!written) co_return written.error().wrap("writing the webhook's Secret");
      logger.info("issued the webhook's serving certificate",
                  {{"secret", fmt::format("{}/{}", options.secret_namespace, options.secret_name)}, {"why", why}});
      kept = std::move(m);
    }
    tls = {kept->serving.cert_pem, kept->serving.key_pem};
    ca_pem = kept->ca.cert_pem;
    co_return ok();
  }

  // Sets every webhook's caBundle of the configuration to the CA, when it differs.
  asio::awaitable<Result<void>> refresh_ca_bundle() {
    if (options.configuration.empty() || ca_pem.empty()) co_return ok();
    auto body = co_await client->get(webhook_configurations(), "", options.configuration);
    if (!body && body.error().is_not_found()) {
      if (!warned_missing_configuration)
        logger.warn("the MutatingWebhookConfiguration does not exist: no pod is steered until it does", {{"name", options.configuration}});
      warned_missing_configuration = true;
      configuration_missing = true;
      co_return ok();
    }
    if (!body) co_return body.error().wrap("reading the MutatingWebhookConfiguration");
    warned_missing_configuration = false;
    configuration_missing = false;
    model::JsonDocument doc;
    if (auto parsed = model::parse_json(*body, doc); !parsed) co_return parsed.error();
    const std::string bundle = base64_encode(ca_pem);
    const model::JsonValue* hooks = model::json_member(doc, "webhooks");
    if (!hooks || !hooks->IsArray()) co_return ok();
    std::string ops = fmt::format(R"({{"op":"test","path":"/metadata/resourceVersion","value":{}}})",
                                  json_quote(model::json_string(doc, {"metadata", "resourceVersion"})));
    bool changed = false;
    for (rapidjson::SizeType i = 0; i < hooks->Size(); ++i) {
      if (model::json_string((*hooks)[i], {"clientConfig", "caBundle"}) == bundle) continue;
      ops += fmt::format(R"(,{{"op":"add","path":"/webhooks/{}/clientConfig/caBundle","value":"{}"}})", i, bundle);
      changed = true;
    }
    if (!changed) co_return ok();
    auto patched =
        co_await client->patch(webhook_configurations(), "", options.configuration, kube::PatchType::kJson, fmt::format("[{}]", ops));
    if (!patched) co_return patched.error().wrap("setting the webhook configuration's caBundle");
    logger.info("set the webhook configuration's caBundle", {{"name", options.configuration}});
    co_return ok();
  }

  asio::awaitable<void> keep_certificate() {
    while (!stopped) {
      Duration next = options.check_interval;
      auto r = co_await refresh_certificate();
      if (r) r = co_await refresh_ca_bundle();
      if (!r) logger.warn("the webhook's certificate is not current; retrying", {{"error", r.error()}});
      if (!r || configuration_missing) next = std::min<Duration>(next, std::chrono::seconds(2));
      co_await timers.sleep_until(timers.now() + next, &wake);
    }
  }
};

WebhookServer::WebhookServer(asio::any_io_executor executor, std::shared_ptr<kube::Client> client, runtime::Timers& timers,
                             drain::SteeringBook& book, runtime::Metrics& metrics, WebhookOptions options)
    : impl_(std::make_unique<Impl>(executor, std::move(client), timers, book, metrics, std::move(options))) {
  impl_->server = std::make_unique<runtime::HttpServer>(
      executor, [impl = impl_.get()](const runtime::HttpRequestView& r) { return impl->handle(r); },
      [impl = impl_.get()] { return impl->tls; });
}

WebhookServer::~WebhookServer() = default;

Result<uint16_t> WebhookServer::listen() { return impl_->server->listen(impl_->options.address); }

asio::awaitable<void> WebhookServer::run() {
  runtime::spawn(impl_->executor, impl_->server->run(), "webhook server");
  // A restarted container keeps its pod, and the label a leader put on it.
  co_await label_leader(false);
  impl_->unlabelled = true;
  impl_->unlabel_done.notify();
  co_await impl_->keep_certificate();
}

void WebhookServer::stop() {
  impl_->stopped = true;
  impl_->server->stop();
  impl_->wake.notify();
}

bool WebhookServer::ready() const { return !impl_->tls.cert_pem.empty(); }

asio::awaitable<void> WebhookServer::label_leader(bool leading) {
  const WebhookOptions& o = impl_->options;
  if (o.pod_name.empty() || o.pod_namespace.empty()) co_return;
  // The label taken off at the start goes first: a leader elected at once must not have its
  // label removed by a request that arrives after its own.
  while (leading && !impl_->unlabelled && !impl_->stopped) co_await impl_->unlabel_done.wait(std::chrono::seconds(1));
  std::string patch =
      fmt::format(R"({{"metadata":{{"labels":{{{}:{}}}}}}})", json_quote(kWebhookLeaderLabel), leading ? "\"true\"" : "null");
  auto r = co_await impl_->client->patch(kube::Resource::pods(), o.pod_namespace, o.pod_name, kube::PatchType::kMerge, patch);
  if (!r)
    logger.warn(leading ? "could not label this pod as the webhook's leader: the webhook Service may call a follower, which steers nothing"
                        : "could not take the webhook's leader label off this pod",
                {{"pod", fmt::format("{}/{}", o.pod_namespace, o.pod_name)}, {"error", r.error()}});
}

}  // namespace spotshift::op
