// The reference documents against what they describe: the policy reference against the CRD, the
// events and metrics reference against the code; and the e2e test cases against their meson
// registration.

#include "core/strings.hpp"
#include "model/yaml.hpp"
#include "support/catch.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

using namespace spotshift;

namespace {

const std::string kRoot = SOURCE_ROOT;

std::string text(const std::string& rel) { return read_file(kRoot + "/" + rel).value(); }

std::string scalar(const model::JsonValue& v) {
  if (v.IsString()) return v.GetString();
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsObject() && v.MemberCount() == 0) return "{}";
  return "";
}

bool is_selector(const model::JsonValue& schema) {
  const auto* props = model::json_member(schema, "properties");
  return props && model::json_member(*props, "matchLabels");
}

// Every documented path in the schema below `path`: objects with properties are walked (label
// selectors are one field), list items as path[].
void walk(const model::JsonValue& schema, const std::string& path, std::map<std::string, std::string>& out) {
  const auto* def = model::json_member(schema, "default");
  out[path] = def ? scalar(*def) : "";
  if (is_selector(schema)) return;
  if (const auto* props = model::json_member(schema, "properties"))
    for (auto it = props->MemberBegin(); it != props->MemberEnd(); ++it) walk(it->value, path + "." + it->name.GetString(), out);
  if (const auto* items = model::json_member(schema, "items"); items && model::json_member(*items, "properties"))
    for (auto it = model::json_member(*items, "properties")->MemberBegin(); it != model::json_member(*items, "properties")->MemberEnd();
         ++it)
      walk(it->value, path + "[]." + it->name.GetString(), out);
}

// Rows of a markdown table whose first cell is `prefix...`: first cell -> the row's cells.
std::map<std::string, std::vector<std::string>> table_rows(const std::string& doc, const std::string& prefix) {
  std::map<std::string, std::vector<std::string>> rows;
  for (auto line : split(doc, '\n')) {
    if (!line.starts_with("| `" + prefix)) continue;
    std::vector<std::string> cells;
    for (auto c : split(line, '|')) cells.push_back(std::string(trim(c)));
    // cells[0] is empty (before the first bar)
    std::string key = cells.at(1);
    key = key.substr(1, key.find('`', 1) - 1);
    rows[key] = cells;
  }
  return rows;
}

std::set<std::string> matches(const std::string& source, const std::regex& re, int group = 1) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), re); it != std::sregex_iterator(); ++it) out.insert((*it)[group].str());
  return out;
}

// The .cpp files of the operator and of lib/runtime: where telemetry is used.
std::string telemetry_users() {
  std::string all;
  for (const std::string dir : {"operator", "lib/runtime"})
    for (const auto& e : std::filesystem::directory_iterator(kRoot + "/" + dir))
      if (e.path().extension() == ".cpp") all += text(dir + "/" + e.path().filename().string());
  return all;
}

// Where metric families and event reasons are declared, once each.
const char* const kTelemetryHeaders[] = {"lib/runtime/telemetry.hpp", "operator/telemetry.hpp"};

// Every declaration (`kName{"...`) of a header is used as telemetry::kName somewhere.
void check_declarations_used(const std::string& header, const std::string& users) {
  for (const auto& name : matches(text(header), std::regex(R"re(\b(k[A-Z][A-Za-z]+)\{")re"))) {
    INFO(header << ": " << name);
    CHECK(users.find("telemetry::" + name) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("the policy reference documents every CRD field with its default, and nothing else", "[docs]") {
  auto crd = model::parse_yaml(text("crds/reschedulepolicies.spotshift.io.yaml")).value();
  const auto& schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
  std::map<std::string, std::string> spec_fields, status_fields;
  walk(schema["spec"], "spec", spec_fields);
  spec_fields.erase("spec");
  for (auto it = schema["status"]["properties"].MemberBegin(); it != schema["status"]["properties"].MemberEnd(); ++it)
    status_fields[fmt::format("status.{}", it->name.GetString())] = "";

  std::string doc = text("docs/policy-reference.md");
  auto spec_rows = table_rows(doc, "spec.");
  auto status_rows = table_rows(doc, "status.");
  for (const auto& [path, def] : spec_fields) {
    INFO(path);
    REQUIRE(spec_rows.count(path));
    // A scalar default in the CRD appears, in backquotes, in the Default column.
    if (!def.empty()) CHECK(spec_rows[path].at(3).find("`" + def + "`") != std::string::npos);
  }
  for (const auto& [path, row] : spec_rows) {
    INFO(path);
    CHECK(spec_fields.count(path));
  }
  for (const auto& [path, _] : status_fields) {
    INFO(path);
    CHECK(status_rows.count(path));
  }
  for (const auto& [path, _] : status_rows) {
    INFO(path);
    CHECK(status_fields.count(path));
  }
}

TEST_CASE("the events reference lists exactly the reasons the operator declares, with their types", "[docs]") {
  std::string declared = text("operator/telemetry.hpp");
  std::map<std::string, std::string> reasons;  // reason -> type
  std::regex re(R"re(EventReason k[A-Za-z]+\{"([A-Z][A-Za-z]+)", "[A-Z][A-Za-z]+", EventType::k(Normal|Warning)\})re");
  for (auto it = std::sregex_iterator(declared.begin(), declared.end(), re); it != std::sregex_iterator(); ++it)
    reasons[(*it)[1].str()] = (*it)[2].str();
  REQUIRE(reasons.size() >= 10);
  auto rows = table_rows(text("docs/events-and-metrics.md"), "");
  std::map<std::string, std::string> documented;
  for (const auto& [key, cells] : rows)
    if (!key.starts_with("spotshift_") && !key.starts_with("process_")) documented[key] = cells.at(2);
  CHECK(documented == reasons);
}

TEST_CASE("the metrics reference lists exactly the metrics the operator declares", "[docs]") {
  std::set<std::string> declared;
  for (const char* header : kTelemetryHeaders)
    for (const auto& name : matches(text(header), std::regex(R"re("(spotshift_[a-z_]+)")re"))) declared.insert(name);
  REQUIRE(declared.size() >= 10);
  std::set<std::string> documented;
  for (const auto& [key, cells] : table_rows(text("docs/events-and-metrics.md"), "spotshift_")) documented.insert(key);
  CHECK(documented == declared);
}

TEST_CASE("the metrics reference gives each metric the type and labels of its declaration", "[docs]") {
  // A declaration: {"name", "help" "more help"..., MetricType::kGauge, {"label", ...}, ...}.
  const std::regex decl(R"re(\{\s*"(spotshift_[a-z_]+)",\s*(?:"(?:[^"\\]|\\.)*"\s*)+,\s*MetricType::k([A-Za-z]+),\s*\{([^}]*)\})re");
  std::map<std::string, std::string> declared;  // name -> "type | `label`, `label`"
  for (const char* header : kTelemetryHeaders) {
    std::string t = text(header);
    for (auto it = std::sregex_iterator(t.begin(), t.end(), decl); it != std::sregex_iterator(); ++it) {
      std::string type = (*it)[2].str();
      type[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(type[0])));
      std::vector<std::string> labels;
      const std::string list = (*it)[3].str();
      const std::regex label(R"re("([a-z_]+)")re");
      for (auto l = std::sregex_iterator(list.begin(), list.end(), label); l != std::sregex_iterator(); ++l)
        labels.push_back("`" + (*l)[1].str() + "`");
      declared[(*it)[1].str()] = type + " | " + (labels.empty() ? "—" : join(labels, ", "));
    }
  }
  REQUIRE(declared.size() >= 10);
  std::map<std::string, std::string> documented;
  for (const auto& [key, cells] : table_rows(text("docs/events-and-metrics.md"), "spotshift_"))
    documented[key] = cells.at(2) + " | " + cells.at(3);
  for (const auto& [name, type_and_labels] : declared) {
    INFO(name);
    CHECK(documented[name] == type_and_labels);
  }
}

TEST_CASE("telemetry is declared once and used by its declaration", "[docs]") {
  const std::string users = telemetry_users();
  // No family registered by a name written at its call site, no event recorded by a string reason.
  CHECK(matches(users, std::regex(R"re("(spotshift_[a-z_]+)")re")).empty());
  CHECK(matches(users, std::regex(R"re(record\([^;]*"(Normal|Warning)")re")).empty());
  for (const char* header : kTelemetryHeaders) check_declarations_used(header, users);
}

// Some suites run their Catch2 binary once per registered name pattern ('NAME*') or tag (an
// entry whose pattern is ''), in the `foreach` lists of tests/e2e/meson.build,
// tests/helm/meson.build and tests/kubesim/meson.build: a TEST_CASE that nothing registered
// selects would never run in CI, and one selected twice by one list runs twice. A list registers
// the cases for one backend (kubesim, or the real control plane), so a case may be in several.
void check_registration(const std::string& meson_build, const std::vector<std::string>& sources, size_t at_least) {
  std::string build = text(meson_build);
  struct List {
    std::vector<std::string> patterns, tags;
  };
  std::vector<List> lists;
  // A pattern may hold an escaped quote (meson's \').
  std::regex pattern_re(R"re('((?:[^'\\\[\]]|\\')+)\*'\],)re");
  std::regex tag_re(R"re(\['[^']*', '(\[[^']*\])', ''\],)re");
  size_t total = 0;
  for (size_t at = build.find("foreach t : ["); at != std::string::npos; at = build.find("foreach t : [", at + 1)) {
    std::string block = build.substr(at, build.find("\n  ]", at) - at);
    List l;
    for (auto it = std::sregex_iterator(block.begin(), block.end(), pattern_re); it != std::sregex_iterator(); ++it)
      l.patterns.push_back(std::regex_replace((*it)[1].str(), std::regex(R"(\\')"), "'"));
    for (auto it = std::sregex_iterator(block.begin(), block.end(), tag_re); it != std::sregex_iterator(); ++it)
      l.tags.push_back((*it)[1].str());
    total += l.patterns.size();
    lists.push_back(std::move(l));
  }
  REQUIRE(total >= at_least);
  std::vector<std::vector<int>> used;
  for (const auto& l : lists) used.emplace_back(l.patterns.size(), 0);
  std::regex case_re(R"re(TEST_CASE\(\s*"([^"]+)",\s*"([^"]*)"\))re");
  for (const auto& source : sources) {
    std::string code = text(source);
    for (auto it = std::sregex_iterator(code.begin(), code.end(), case_re); it != std::sregex_iterator(); ++it) {
      std::string name = (*it)[1].str(), case_tags = (*it)[2].str();
      INFO(source << ": " << name);
      int lists_selecting = 0;
      for (size_t l = 0; l < lists.size(); ++l) {
        int matches = 0;
        for (size_t i = 0; i < lists[l].patterns.size(); ++i)
          if (name.starts_with(lists[l].patterns[i])) ++matches, ++used[l][i];
        for (const auto& t : lists[l].tags) matches += case_tags.find(t) != std::string::npos ? 1 : 0;
        CHECK(matches <= 1);
        lists_selecting += matches > 0 ? 1 : 0;
      }
      CHECK(lists_selecting >= 1);
    }
  }
  for (size_t l = 0; l < lists.size(); ++l)
    for (size_t i = 0; i < lists[l].patterns.size(); ++i) {
      INFO(meson_build << ": the pattern '" << lists[l].patterns[i] << "*' selects no test case");
      CHECK(used[l][i] > 0);
    }
}

TEST_CASE("every end-to-end and kubesim HTTP test case is registered with meson", "[docs]") {
  check_registration("tests/e2e/meson.build", {"tests/e2e/operator_e2e_test.cpp", "tests/e2e/crd_e2e_test.cpp"}, 8);
  check_registration("tests/kubesim/meson.build", {"tests/kubesim/http_test.cpp"}, 4);
  check_registration("tests/helm/meson.build",
                     {"tests/helm/chart_test.cpp", "tests/helm/chart_e2e_test.cpp", "tests/helm/chart_real_test.cpp"}, 8);
}

TEST_CASE("every refusal the policy reference shows is one the CRD test applies to both backends", "[docs]") {
  std::string doc = text("docs/policy-reference.md");
  auto at = doc.find("### What the API server refuses");
  REQUIRE(at != std::string::npos);
  std::string section = doc.substr(at, doc.find("\n#", at + 1) - at);
  std::string test = text("tests/e2e/crd_e2e_test.cpp");
  std::regex row(R"re(\n\| `[^\n]*` \| `([^\n]*)`[^\n]*\|)re");
  int rows = 0;
  for (auto it = std::sregex_iterator(section.begin(), section.end(), row); it != std::sregex_iterator(); ++it) {
    std::string message = std::regex_replace((*it)[1].str(), std::regex(R"(\\\|)"), "|");
    if (message.ends_with(" ...")) message.resize(message.size() - 4);
    INFO(message);
    CHECK(test.find(message) != std::string::npos);
    ++rows;
  }
  CHECK(rows == 18);
}

TEST_CASE("every test the guarantees table of docs/how-it-decides.md cites exists", "[docs]") {
  std::string doc = text("docs/how-it-decides.md");
  auto at = doc.find("## 6. Guarantees");
  REQUIRE(at != std::string::npos);
  std::string section = doc.substr(at);
  std::set<std::string> cited = matches(section, std::regex(R"re("([^"]+)")re"));
  std::set<std::string> tests;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kRoot + "/tests"))
    if (e.path().extension() == ".cpp") {
      auto names = matches(read_file(e.path().string()).value(), std::regex(R"re(TEST_CASE\(\s*"([^"]+)")re"));
      tests.insert(names.begin(), names.end());
    }
  CHECK(cited.size() >= 15);
  for (const auto& name : cited) {
    INFO(name);
    CHECK(tests.count(name));
  }
}

namespace {

// The user documents: every page of docs/, the README and the charts' READMEs.
std::vector<std::pair<std::string, std::string>> user_documents() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : std::filesystem::directory_iterator(kRoot + "/docs"))
    if (e.path().extension() == ".md") out.emplace_back("docs/" + e.path().filename().string(), read_file(e.path().string()).value());
  for (const char* f : {"README.md", "charts/spotshift/README.md", "charts/spotshift-crds/README.md"}) out.emplace_back(f, text(f));
  return out;
}

std::set<std::string> declared_metrics() {
  std::set<std::string> declared;
  for (const char* header : kTelemetryHeaders)
    for (const auto& name : matches(text(header), std::regex(R"re("(spotshift_[a-z_]+)")re"))) declared.insert(name);
  return declared;
}

// The flags a subcommand's --help lists.
std::set<std::string> help_flags(const std::string& command) {
  std::string out;
  FILE* p = popen(fmt::format("{} {} --help 2>&1", SPOTSHIFT_BIN, command).c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  auto flags = matches(out, std::regex(R"re(\n\s+(--[a-z][a-z0-9-]*))re"));
  REQUIRE(flags.size() >= 3);
  flags.insert("--help");
  return flags;
}

}  // namespace

TEST_CASE("every metric the documents name is one the operator declares", "[docs]") {
  const auto declared = declared_metrics();
  for (const auto& [file, doc] : user_documents())
    for (auto name : matches(doc, std::regex(R"re(\b(spotshift_[a-z_]+))re"))) {
      for (std::string_view suffix : {"_bucket", "_count", "_sum"})
        if (name.ends_with(suffix) && !declared.count(name)) name.resize(name.size() - suffix.size());
      INFO(file << ": " << name);
      CHECK(declared.count(name));
    }
}

TEST_CASE("every spotshift run and spotshift plan flag the documents give is one the binary takes", "[docs]") {
  const std::map<std::string, std::set<std::string>> flags = {{"run", help_flags("run")}, {"plan", help_flags("plan")}};
  int checked = 0;
  for (const auto& [file, doc] : user_documents())
    for (auto line : split(doc, '\n')) {
      std::smatch m;
      std::string l(line);
      if (!std::regex_search(l, m, std::regex(R"((?:kubectl |^|[^-\w])spotshift (run|plan)\b(.*))"))) continue;
      const auto& known = flags.at(m[1]);
      std::string rest = m[2];
      // Up to the end of the command: a closing backtick or a shell comment.
      rest = rest.substr(0, std::min(rest.find('`'), rest.find(" #")));
      for (const auto& flag : matches(rest, std::regex(R"re((?:^|\s)(--[a-z][a-z0-9-]*))re"))) {
        INFO(file << ": spotshift " << m[1] << " " << flag << "\n" << l);
        CHECK(known.count(flag));
        ++checked;
      }
    }
  CHECK(checked >= 10);
}

TEST_CASE("the event reasons and gates (and modes and alerts) the user documents name exist", "[docs]") {
  std::set<std::string> known;
  std::string declared = text("operator/telemetry.hpp");
  for (const auto& r : matches(declared, std::regex(R"re(EventReason k[A-Za-z]+\{"([A-Z][A-Za-z]+)")re"))) known.insert(r);
  REQUIRE(known.size() >= 10);
  for (const auto& g : matches(text("lib/drain/gate.hpp"), std::regex(R"re("([A-Z][A-Za-z]+)")re"))) known.insert(g);
  // The policy's conditions, their reasons and its modes (operator/status.cpp).
  std::string status = text("operator/status.cpp");
  for (const auto& s : matches(status, std::regex(R"re("([A-Z][A-Za-z]+)")re"))) known.insert(s);
  for (const auto& a : matches(text("charts/spotshift/templates/prometheusrule.yaml"), std::regex(R"re(alert: ([A-Za-z]+))re")))
    known.insert(a);
  // Kubernetes' own words the documents use in the same style.
  for (const char* k : {"PodDisruptionBudget", "ReschedulePolicy", "ResourceQuota", "PreferNoSchedule", "NoSchedule", "Exists", "In",
                        "NotIn", "DoesNotExist", "Move", "Block", "Any", "SpotOnly", "Disabled", "RequestedCPU", "ScarceResources"})
    known.insert(k);
  // In the pages that explain what users see, a backticked CamelCase word that reads like a reason
  // (two capitals or more) must be one of them.
  for (const char* file : {"docs/troubleshooting.md", "docs/faq.md", "docs/user-guide.md", "docs/events-and-metrics.md"}) {
    for (const auto& word : matches(text(file), std::regex(R"re(`([A-Z][a-z]+(?:[A-Z][a-z]+)+)`)re"))) {
      INFO(file << ": " << word);
      CHECK(known.count(word));
    }
  }
}
