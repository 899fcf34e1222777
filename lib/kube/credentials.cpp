#include "kube/credentials.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace spotshift::kube {

TokenFileCredentials::TokenFileCredentials(std::string path, const Clock& clock, Duration max_age)
    : path_(std::move(path)), clock_(clock), max_age_(max_age) {}

Result<Credential> TokenFileCredentials::get(bool refresh) {
  std::lock_guard lock(mutex_);
  Time now = clock_.now();
  if (refresh || !read_at_ || now - *read_at_ >= max_age_) {
    auto text = read_file(path_);
    if (!text) return text.error().wrap("reading the bearer token file");
    token_ = std::string(trim(*text));
    read_at_ = now;
  }
  return Credential{token_, {}, {}, {}};
}

ExecCredentials::ExecCredentials(ExecConfig exec, std::string server, std::string ca_pem, const Clock& clock)
    : exec_(std::move(exec)), server_(std::move(server)), ca_pem_(std::move(ca_pem)), clock_(clock) {}

Result<Credential> ExecCredentials::get(bool refresh) {
  std::lock_guard lock(mutex_);
  if (!refresh && cached_ && (!cached_->expiry || clock_.now() < *cached_->expiry)) return *cached_;
  auto c = run_exec_plugin(exec_, server_, ca_pem_);
  ++runs_;
  if (!c) return c.error();
  cached_ = *c;
  return *c;
}

namespace {

std::string exec_info(const ExecConfig& exec, const std::string& server, const std::string& ca_pem) {
  std::string cluster;
  if (exec.provide_cluster_info)
    cluster = fmt::format(R"("cluster":{{"server":"{}","certificate-authority-data":"{}","config":null}},)", server, base64_encode(ca_pem));
  return fmt::format(R"({{"kind":"ExecCredential","apiVersion":"{}","spec":{{{}"interactive":false}}}})", exec.api_version, cluster);
}

}  // namespace

Result<Credential> run_exec_plugin(const ExecConfig& exec, const std::string& server, const std::string& ca_pem,
                                   std::chrono::seconds timeout) {
  auto fail = [&](std::string why) { return Error::config(fmt::format("exec plugin \"{}\": {}", exec.command, why)); };
  if (exec.interactive_mode == "Always") return fail("interactiveMode Always needs a terminal, which an operator does not have");
  int out_pipe[2];
  if (pipe(out_pipe) != 0) return fail(fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, out_pipe[1]);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) env_storage.emplace_back(*e);
  for (const auto& [k, v] : exec.env) env_storage.push_back(k + "=" + v);
  env_storage.push_back("KUBERNETES_EXEC_INFO=" + exec_info(exec, server, ca_pem));
  std::vector<char*> envp;
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_storage{exec.command};
  arg_storage.insert(arg_storage.end(), exec.args.begin(), exec.args.end());
  std::vector<char*> argv;
  for (auto& s : arg_storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, exec.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    return fail(fmt::format("cannot run it: {}", std::strerror(rc)));
  }
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out_pipe[0], POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    ssize_t got = read(out_pipe[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.append(buf, static_cast<size_t>(got));
  }
  close(out_pipe[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (timed_out) return fail(fmt::format("did not finish within {} s", timeout.count()));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail(fmt::format("exited with status {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  rapidjson::Document d;
  d.Parse(out.c_str(), out.size());
  if (d.HasParseError() || !d.IsObject()) return fail("did not print an ExecCredential as JSON");
  auto member = [&](const rapidjson::Value& v, const char* k) -> std::string {
    auto it = v.FindMember(k);
    return it != v.MemberEnd() && it->value.IsString() ? std::string(it->value.GetString(), it->value.GetStringLength()) : "";
  };
  if (member(d, "kind") != "ExecCredential") return fail("printed JSON whose kind is not ExecCredential");
  if (member(d, "apiVersion") != exec.api_version)
    return fail(fmt::format("printed apiVersion \"{}\", want \"{}\"", member(d, "apiVersion"), exec.api_version));
  auto status_it = d.FindMember("status");
  if (status_it == d.MemberEnd() || !status_it->value.IsObject()) return fail("printed an ExecCredential without status");
  Credential c;
  c.token = member(status_it->value, "token");
  c.client_certificate_pem = member(status_it->value, "clientCertificateData");
  c.client_key_pem = member(status_it->value, "clientKeyData");
  if (c.token.empty() && c.client_certificate_pem.empty())
    return fail("printed an ExecCredential with neither a token nor a client certificate");
  if (c.client_certificate_pem.empty() != c.client_key_pem.empty())
    return fail("printed a client certificate without a key, or a key without a certificate");
  if (auto exp = member(status_it->value, "expirationTimestamp"); !exp.empty()) {
    auto t = parse_time(exp);
    if (!t) return fail(fmt::format("expirationTimestamp: {}", t.error().message));
    c.expiry = *t;
  }
  return c;
}

std::shared_ptr<CredentialSource> make_credentials(const ClientConfig& config, const Clock& clock) {
  if (config.exec) return std::make_shared<ExecCredentials>(*config.exec, config.server, config.ca_pem, clock);
  if (!config.token_file.empty()) return std::make_shared<TokenFileCredentials>(config.token_file, clock);
  return std::make_shared<StaticCredentials>(Credential{config.token, {}, {}, {}});
}

}  // namespace spotshift::kube
