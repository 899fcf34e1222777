#include "kube/config.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <map>

namespace spotshift::kube {

namespace fs = std::filesystem;

std::string ClientConfig::authority() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<void> parse_server(ClientConfig& c) {
  std::string_view s = c.server;
  auto bad = [&](std::string_view why) { return Error::config(fmt::format("server \"{}\": {}", c.server, why)); };
  auto scheme_end = s.find("://");
  if (scheme_end == std::string_view::npos) return bad("want a URL such as https://10.0.0.1:6443");
  c.scheme = std::string(s.substr(0, scheme_end));
  if (c.scheme != "http" && c.scheme != "https") return bad("the scheme must be http or https");
  std::string_view rest = s.substr(scheme_end + 3);
  auto slash = rest.find('/');
  if (slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") return bad("a path prefix after the host is not supported");
    rest = rest.substr(0, slash);
  }
  std::string_view port_text;
  if (rest.starts_with("[")) {
    auto close = rest.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address needs a closing ']'");
    c.host = std::string(rest.substr(1, close - 1));
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return bad("expected ':' after the IPv6 address");
      port_text = rest.substr(close + 2);
    }
  } else {
    auto colon = rest.rfind(':');
    c.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port_text = rest.substr(colon + 1);
  }
  if (c.host.empty()) return bad("no host");
  if (port_text.empty()) {
    c.port = c.scheme == "https" ? 443 : 80;
  } else {
    auto p = parse_int(port_text);
    if (!p || *p <= 0 || *p > 65535) return bad(fmt::format("invalid port \"{}\"", port_text));
    c.port = static_cast<uint16_t>(*p);
  }
  return {};
}

bool in_cluster() { return std::getenv("KUBERNETES_SERVICE_HOST") && std::getenv("KUBERNETES_SERVICE_PORT"); }

Result<ClientConfig> in_cluster_config(const InClusterPaths& paths) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port)
    return Error::config("not in cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  ClientConfig c;
  std::string h = host;
  c.server = h.find(':') != std::string::npos ? fmt::format("https://[{}]:{}", h, port) : fmt::format("https://{}:{}", h, port);
  if (auto r = parse_server(c); !r) return r.error().wrap("in-cluster config");
  c.token_file = paths.token;
  if (!fs::exists(paths.token))
    return Error::config(fmt::format("in-cluster config: service account token file {} does not exist", paths.token));
  auto ca = read_file(paths.ca);
  if (!ca) return ca.error().wrap("in-cluster config: reading the CA");
  c.ca_pem = *ca;
  if (auto ns = read_file(paths.ns)) c.default_namespace = std::string(trim(*ns));
  c.source = "in-cluster";
  return c;
}

namespace {

struct Loaded {
  std::string path;
  std::string dir;
  YAML::Node root;
};

std::string resolve(const std::string& dir, const std::string& p) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(dir) / p).lexically_normal().string();
}

// The entry named `name` in a list of {name, <kind>: {...}} across files; first file wins.
std::pair<YAML::Node, const Loaded*> find_named(const std::vector<Loaded>& files, const char* list, const char* inner,
                                                const std::string& name) {
  for (const auto& f : files) {
    YAML::Node entries = f.root[list];
    if (!entries || !entries.IsSequence()) continue;
    for (const auto& e : entries)
      if (e["name"] && e["name"].as<std::string>("") == name) return {e[inner], &f};
  }
  return {YAML::Node(), nullptr};
}

std::string str(const YAML::Node& n, const char* key) {
  YAML::Node v = n[key];
  if (!v || !v.IsScalar()) return "";
  return v.as<std::string>("");
}

Result<std::string> data_or_file(const YAML::Node& n, const char* data_key, const char* file_key, const Loaded& where,
                                 const std::string& entry) {
  if (std::string data = str(n, data_key); !data.empty()) {
    auto decoded = base64_decode(data);
    if (!decoded)
      return Error::config(fmt::format("kubeconfig {}: {} {}: invalid base64: {}", where.path, entry, data_key, decoded.error().message));
    return *decoded;
  }
  if (std::string file = str(n, file_key); !file.empty()) {
    auto content = read_file(resolve(where.dir, file));
    if (!content) return Error::config(fmt::format("kubeconfig {}: {} {}: {}", where.path, entry, file_key, content.error().message));
    return *content;
  }
  return std::string();
}

}  // namespace

Result<ClientConfig> kubeconfig_config(const std::vector<std::string>& paths, const std::string& context_override) {
  std::vector<Loaded> files;
  for (const auto& p : paths) {
    if (p.empty()) continue;
    auto text = read_file(p);
    if (!text) return Error::config(fmt::format("kubeconfig {}: {}", p, text.error().message));
    Loaded l;
    l.path = p;
    l.dir = fs::path(p).parent_path().string();
    try {
      l.root = YAML::Load(*text);
    } catch (const YAML::Exception& e) {
      return Error::config(fmt::format("kubeconfig {}: invalid YAML at line {}: {}", p, e.mark.line + 1, e.msg));
    }
    if (l.root.IsNull()) continue;
    if (!l.root.IsMap()) return Error::config(fmt::format("kubeconfig {}: the document must be a map", p));
    files.push_back(std::move(l));
  }
  if (files.empty()) return Error::config(fmt::format("no kubeconfig found (looked at {})", fmt::join(paths, ", ")));
  std::string ctx_name = context_override;
  if (ctx_name.empty())
    for (const auto& f : files)
      if (ctx_name.empty()) ctx_name = str(f.root, "current-context");
  if (ctx_name.empty())
    return Error::config(fmt::format("kubeconfig {}: current-context is not set and no context was given", files[0].path));
  auto [ctx, ctx_file] = find_named(files, "contexts", "context", ctx_name);
  if (!ctx_file) return Error::config(fmt::format("kubeconfig {}: context \"{}\" is not defined in contexts", files[0].path, ctx_name));
  std::string cluster_name = str(ctx, "cluster");
  std::string user_name = str(ctx, "user");
  if (cluster_name.empty())
    return Error::config(fmt::format("kubeconfig {}: context \"{}\": field cluster is missing", ctx_file->path, ctx_name));
  auto [cluster, cluster_file] = find_named(files, "clusters", "cluster", cluster_name);
  if (!cluster_file)
    return Error::config(fmt::format("kubeconfig {}: context \"{}\" refers to cluster \"{}\", which is not defined", ctx_file->path,
                                     ctx_name, cluster_name));
  ClientConfig c;
  c.source = fmt::format("kubeconfig {} (context {})", ctx_file->path, ctx_name);
  std::string cluster_entry = fmt::format("cluster \"{}\"", cluster_name);
  c.server = str(cluster, "server");
  if (c.server.empty()) return Error::config(fmt::format("kubeconfig {}: {}: field server is missing", cluster_file->path, cluster_entry));
  if (auto r = parse_server(c); !r) return r.error().wrap(fmt::format("kubeconfig {}: {}", cluster_file->path, cluster_entry));
  auto ca = data_or_file(cluster, "certificate-authority-data", "certificate-authority", *cluster_file, cluster_entry);
  if (!ca) return ca.error();
  c.ca_pem = *ca;
  c.insecure_skip_tls_verify = str(cluster, "insecure-skip-tls-verify") == "true";
  c.tls_server_name = str(cluster, "tls-server-name");
  if (std::string ns = str(ctx, "namespace"); !ns.empty()) c.default_namespace = ns;

  if (!user_name.empty()) {
    auto [user, user_file] = find_named(files, "users", "user", user_name);
    if (!user_file)
      return Error::config(
          fmt::format("kubeconfig {}: context \"{}\" refers to user \"{}\", which is not defined", ctx_file->path, ctx_name, user_name));
    std::string user_entry = fmt::format("user \"{}\"", user_name);
    if (user && user.IsMap()) {
      if (user["auth-provider"])
        return Error::config(
            fmt::format("kubeconfig {}: {}: auth-provider is the legacy authentication plugin mechanism and is not supported; use an "
                        "exec plugin (client.authentication.k8s.io/v1) instead",
                        user_file->path, user_entry));
      c.token = str(user, "token");
      if (std::string tf = str(user, "tokenFile"); !tf.empty()) c.token_file = resolve(user_file->dir, tf);
      auto cert = data_or_file(user, "client-certificate-data", "client-certificate", *user_file, user_entry);
      if (!cert) return cert.error();
      auto key = data_or_file(user, "client-key-data", "client-key", *user_file, user_entry);
      if (!key) return key.error();
      c.client_certificate_pem = *cert;
      c.client_key_pem = *key;
      if (c.client_certificate_pem.empty() != c.client_key_pem.empty())
        return Error::config(fmt::format("kubeconfig {}: {}: a client certificate needs a client key, and the other way round",
                                         user_file->path, user_entry));
      if (YAML::Node exec = user["exec"]) {
        ExecConfig e;
        e.command = str(exec, "command");
        if (e.command.empty()) return Error::config(fmt::format("kubeconfig {}: {}: exec.command is missing", user_file->path, user_entry));
        if (e.command.find('/') != std::string::npos && !fs::path(e.command).is_absolute()) e.command = resolve(user_file->dir, e.command);
        e.api_version = str(exec, "apiVersion");
        if (e.api_version != "client.authentication.k8s.io/v1" && e.api_version != "client.authentication.k8s.io/v1beta1")
          return Error::config(
              fmt::format("kubeconfig {}: {}: exec.apiVersion \"{}\" is not supported (want "
                          "client.authentication.k8s.io/v1)",
                          user_file->path, user_entry, e.api_version));
        if (YAML::Node args = exec["args"]; args && args.IsSequence())
          for (const auto& a : args) e.args.push_back(a.as<std::string>(""));
        if (YAML::Node env = exec["env"]; env && env.IsSequence())
          for (const auto& kv : env) e.env.emplace_back(str(kv, "name"), str(kv, "value"));
        e.interactive_mode = str(exec, "interactiveMode");
        if (e.interactive_mode.empty()) e.interactive_mode = "IfAvailable";
        e.provide_cluster_info = str(exec, "provideClusterInfo") == "true";
        c.exec = std::move(e);
      }
    }
  }
  return c;
}

Result<ClientConfig> load_config(const std::string& flag, const std::string& context) {
  if (!flag.empty()) return kubeconfig_config({flag}, context);
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::vector<std::string> files;
    for (auto part : split(env, ':'))
      if (!part.empty() && fs::exists(std::string(part))) files.emplace_back(part);
    if (files.empty()) return Error::config(fmt::format("KUBECONFIG={} names no file that exists", env));
    return kubeconfig_config(files, context);
  }
  if (in_cluster()) return in_cluster_config();
  const char* home = std::getenv("HOME");
  std::string path = home ? std::string(home) + "/.kube/config" : "";
  if (!path.empty() && fs::exists(path)) return kubeconfig_config({path}, context);
  return Error::config(
      "no cluster configuration: pass --kubeconfig, set KUBECONFIG, run in a pod with a service account, or create "
      "~/.kube/config");
}

}  // namespace spotshift::kube
