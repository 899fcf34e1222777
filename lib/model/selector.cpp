#include "model/selector.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace spotshift::model {

std::string_view to_string(SelectorOp op) {
  switch (op) {
    case SelectorOp::kIn:
      return "In";
    case SelectorOp::kNotIn:
      return "NotIn";
    case SelectorOp::kExists:
      return "Exists";
    case SelectorOp::kDoesNotExist:
      return "DoesNotExist";
    case SelectorOp::kEquals:
      return "=";
    case SelectorOp::kNotEquals:
      return "!=";
    case SelectorOp::kGt:
      return "Gt";
    case SelectorOp::kLt:
      return "Lt";
  }
  return "?";
}

namespace {

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? up to 63 characters.
std::optional<std::string> check_name(std::string_view s, std::string_view what) {
  if (s.empty()) return fmt::format("{} must not be empty", what);
  if (s.size() > 63) return fmt::format("{} must be no more than 63 characters", what);
  if (!alnum(s.front()) || !alnum(s.back())) return fmt::format("{} must begin and end with an alphanumeric character", what);
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return fmt::format("{} may contain only alphanumerics, '-', '_' and '.'", what);
  return std::nullopt;
}

// A lowercase RFC 1123 subdomain up to 253 characters.
std::optional<std::string> check_prefix(std::string_view s) {
  if (s.empty() || s.size() > 253) return "prefix must be a DNS subdomain of 1 to 253 characters";
  for (auto part : split(s, '.')) {
    if (part.empty() || !alnum(part.front()) || !alnum(part.back())) return "prefix must be a lowercase DNS subdomain";
    for (char c : part)
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
        return "prefix must be a lowercase DNS subdomain";
  }
  return std::nullopt;
}

bool is_ident_char(char c) {
  return !(c == ' ' || c == '\t' || c == '\n' || c == ',' || c == '(' || c == ')' || c == '=' || c == '!' || c == '<' || c == '>');
}

class SelectorParser {
 public:
  explicit SelectorParser(std::string_view text) : s_(text) {}

  Result<LabelSelector> run() {
    std::vector<Requirement> reqs;
    skip_ws();
    if (pos_ == s_.size()) return LabelSelector{};
    for (;;) {
      auto r = requirement();
      if (!r) return r.error();
      reqs.push_back(std::move(*r));
      skip_ws();
      if (pos_ == s_.size()) break;
      if (s_[pos_] != ',') return fail(fmt::format("expected ',' at position {}", pos_));
      ++pos_;
    }
    return LabelSelector(std::move(reqs));
  }

 private:
  Error fail(std::string why) const { return Error::invalid(fmt::format("invalid label selector \"{}\": {}", s_, why)); }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  std::string_view ident() {
    size_t b = pos_;
    while (pos_ < s_.size() && is_ident_char(s_[pos_])) ++pos_;
    return s_.substr(b, pos_ - b);
  }
  bool eat(std::string_view tok) {
    if (s_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }

  Result<Requirement> requirement() {
    skip_ws();
    if (eat("!")) {
      skip_ws();
      auto key = ident();
      if (key.empty()) return fail("expected a key after '!'");
      return wrap(Requirement::make(key, SelectorOp::kDoesNotExist, {}));
    }
    auto key = ident();
    if (key.empty()) return fail(fmt::format("expected a key at position {}", pos_));
    skip_ws();
    if (pos_ == s_.size() || s_[pos_] == ',') return wrap(Requirement::make(key, SelectorOp::kExists, {}));
    SelectorOp op;
    if (eat("==") || eat("=")) op = SelectorOp::kEquals;
    else if (eat("!=")) op = SelectorOp::kNotEquals;
    else if (eat(">")) op = SelectorOp::kGt;
    else if (eat("<")) op = SelectorOp::kLt;
    else {
      auto word = ident();
      if (word == "in") op = SelectorOp::kIn;
      else if (word == "notin") op = SelectorOp::kNotIn;
      else return fail(fmt::format("unknown operator \"{}\" after key \"{}\"", word, key));
      skip_ws();
      if (!eat("(")) return fail(fmt::format("expected '(' after {}", word));
      std::vector<std::string> values;
      for (;;) {
        skip_ws();
        values.emplace_back(ident());
        skip_ws();
        if (eat(")")) break;
        if (!eat(",")) return fail(fmt::format("expected ',' or ')' in the values of \"{}\"", key));
      }
      return wrap(Requirement::make(key, op, std::move(values)));
    }
    skip_ws();
    std::string value(ident());
    return wrap(Requirement::make(key, op, {value}));
  }

  Result<Requirement> wrap(Result<Requirement> r) const {
    if (!r) return fail(r.error().message);
    return r;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

void append_escaped(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == ',' || c == '=' || c == '\\') out += '\\';
    out += c;
  }
}

}  // namespace

std::optional<std::string> validate_label_key(std::string_view key) {
  auto slash = key.find('/');
  if (slash != std::string_view::npos) {
    if (auto e = check_prefix(key.substr(0, slash))) return fmt::format("key \"{}\": {}", key, *e);
    key = key.substr(slash + 1);
  }
  if (auto e = check_name(key, "name part")) return fmt::format("key \"{}\": {}", key, *e);
  return std::nullopt;
}

std::optional<std::string> validate_label_value(std::string_view value) {
  if (value.empty()) return std::nullopt;
  if (auto e = check_name(value, "value")) return fmt::format("value \"{}\": {}", value, *e);
  return std::nullopt;
}

Result<Requirement> Requirement::make(std::string_view key, SelectorOp op, std::vector<std::string> values) {
  if (auto e = validate_label_key(key)) return Error::invalid(*e);
  Requirement r;
  r.key = InternedString(key);
  r.op = op;
  switch (op) {
    case SelectorOp::kIn:
    case SelectorOp::kNotIn:
      if (values.empty()) return Error::invalid(fmt::format("key \"{}\": operator {} needs at least one value", key, model::to_string(op)));
      break;
    case SelectorOp::kEquals:
    case SelectorOp::kNotEquals:
      if (values.size() != 1)
        return Error::invalid(fmt::format("key \"{}\": operator {} needs exactly one value", key, model::to_string(op)));
      break;
    case SelectorOp::kExists:
    case SelectorOp::kDoesNotExist:
      if (!values.empty()) return Error::invalid(fmt::format("key \"{}\": operator {} takes no values", key, model::to_string(op)));
      break;
    case SelectorOp::kGt:
    case SelectorOp::kLt: {
      if (values.size() != 1)
        return Error::invalid(fmt::format("key \"{}\": operator {} needs exactly one value", key, model::to_string(op)));
      auto n = parse_int(values[0]);
      if (!n)
        return Error::invalid(
            fmt::format("key \"{}\": operator {} needs an integer value, got \"{}\"", key, model::to_string(op), values[0]));
      r.number = *n;
      r.values.emplace_back(std::to_string(*n));  // canonical, so the string form round-trips
      return r;
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  for (auto& v : values) {
    if (auto e = validate_label_value(v)) return Error::invalid(fmt::format("key \"{}\": {}", key, *e));
    r.values.emplace_back(v);
  }
  return r;
}

bool Requirement::matches_value(std::string_view value) const {
  auto contains = [&] {
    for (const auto& v : values)
      if (v.view() == value) return true;
    return false;
  };
  switch (op) {
    case SelectorOp::kIn:
    case SelectorOp::kEquals:
      return contains();
    case SelectorOp::kNotIn:
    case SelectorOp::kNotEquals:
      return !contains();
    case SelectorOp::kExists:
      return true;
    case SelectorOp::kDoesNotExist:
      return false;
    case SelectorOp::kGt:
    case SelectorOp::kLt: {
      auto n = parse_int(value);
      if (!n) return false;
      return op == SelectorOp::kGt ? *n > number : *n < number;
    }
  }
  return false;
}

bool Requirement::matches(const Labels& labels) const {
  auto value = labels.get(key);
  switch (op) {
    case SelectorOp::kIn:
    case SelectorOp::kEquals:
      if (!value) return false;
      for (const auto& v : values)
        if (v == *value) return true;
      return false;
    case SelectorOp::kNotIn:
    case SelectorOp::kNotEquals:
      if (!value) return true;
      for (const auto& v : values)
        if (v == *value) return false;
      return true;
    case SelectorOp::kExists:
      return value != nullptr;
    case SelectorOp::kDoesNotExist:
      return value == nullptr;
    case SelectorOp::kGt:
    case SelectorOp::kLt:
      return value && matches_value(value->view());
  }
  return false;
}

std::string Requirement::to_string() const {
  auto joined = [&] {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out += ',';
      out += values[i].view();
    }
    return out;
  };
  std::string_view k = key.view();
  switch (op) {
    case SelectorOp::kIn:
      return fmt::format("{} in ({})", k, joined());
    case SelectorOp::kNotIn:
      return fmt::format("{} notin ({})", k, joined());
    case SelectorOp::kExists:
      return std::string(k);
    case SelectorOp::kDoesNotExist:
      return fmt::format("!{}", k);
    case SelectorOp::kEquals:
      return fmt::format("{}={}", k, joined());
    case SelectorOp::kNotEquals:
      return fmt::format("{}!={}", k, joined());
    case SelectorOp::kGt:
      return fmt::format("{}>{}", k, number);
    case SelectorOp::kLt:
      return fmt::format("{}<{}", k, number);
  }
  return "";
}

LabelSelector::LabelSelector(std::vector<Requirement> requirements) : requirements_(std::move(requirements)) {
  std::stable_sort(requirements_.begin(), requirements_.end(), [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
}

Result<LabelSelector> LabelSelector::parse(std::string_view text) { return SelectorParser(text).run(); }

Result<LabelSelector> LabelSelector::from_map(const std::vector<std::pair<std::string, std::string>>& match_labels) {
  std::vector<Requirement> reqs;
  for (const auto& [k, v] : match_labels) {
    auto r = Requirement::make(k, SelectorOp::kEquals, {v});
    if (!r) return r.error();
    reqs.push_back(std::move(*r));
  }
  return LabelSelector(std::move(reqs));
}

bool LabelSelector::matches(const Labels& labels) const {
  for (const auto& r : requirements_)
    if (!r.matches(labels)) return false;
  return true;
}

std::string LabelSelector::to_string() const {
  std::string out;
  for (const auto& r : requirements_) {
    if (!out.empty()) out += ',';
    out += r.to_string();
  }
  return out;
}

bool NodeSelectorTerm::matches(const Labels& node_labels, std::string_view node_name) const {
  if (match_expressions.empty() && match_fields.empty()) return false;
  for (const auto& r : match_expressions)
    if (!r.matches(node_labels)) return false;
  for (const auto& r : match_fields) {
    if (r.key.view() != "metadata.name") return false;
    if (!r.matches_value(node_name)) return false;
  }
  return true;
}

bool NodeSelector::matches(const Labels& node_labels, std::string_view node_name) const {
  for (const auto& t : terms)
    if (t.matches(node_labels, node_name)) return true;
  return false;
}

Result<FieldSelector> FieldSelector::parse(std::string_view text) {
  FieldSelector sel;
  auto fail = [&](std::string why) { return Error::invalid(fmt::format("invalid field selector \"{}\": {}", text, why)); };
  if (trim(text).empty()) return sel;
  // Split on unescaped commas, then each term on its operator.
  std::vector<std::string> terms(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      terms.back() += text[i];
      terms.back() += text[++i];
    } else if (text[i] == ',') {
      terms.emplace_back();
    } else {
      terms.back() += text[i];
    }
  }
  for (const auto& term : terms) {
    FieldRequirement r;
    size_t op_pos = std::string::npos;
    size_t op_len = 0;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term[i] == '\\') {
        ++i;
        continue;
      }
      if (term.compare(i, 2, "!=") == 0) {
        op_pos = i;
        op_len = 2;
        r.negate = true;
        break;
      }
      if (term.compare(i, 2, "==") == 0) {
        op_pos = i;
        op_len = 2;
        break;
      }
      if (term[i] == '=') {
        op_pos = i;
        op_len = 1;
        break;
      }
    }
    if (op_pos == std::string::npos) return fail(fmt::format("\"{}\" needs an operator (=, == or !=)", term));
    r.field = std::string(trim(std::string_view(term).substr(0, op_pos)));
    if (r.field.empty()) return fail(fmt::format("\"{}\" has no field name", term));
    for (char c : r.field)
      if (!alnum(c) && c != '.' && c != '-' && c != '_') return fail(fmt::format("invalid field name \"{}\"", r.field));
    std::string_view raw = std::string_view(term).substr(op_pos + op_len);
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size()) ++i;
      else if (raw[i] == '\\') return fail("trailing backslash");
      else if (raw[i] == '=') return fail(fmt::format("unescaped '=' in the value of \"{}\"", r.field));
      r.value += raw[i];
    }
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

bool FieldSelector::matches(const std::function<std::optional<std::string>(std::string_view)>& get) const {
  for (const auto& r : requirements_) {
    auto v = get(r.field);
    std::string value = v.value_or("");
    if ((value == r.value) == r.negate) return false;
  }
  return true;
}

std::optional<std::string> FieldSelector::unsupported(const std::function<bool(std::string_view)>& supported) const {
  for (const auto& r : requirements_)
    if (!supported(r.field)) return r.field;
  return std::nullopt;
}

std::string FieldSelector::to_string() const {
  std::string out;
  for (const auto& r : requirements_) {
    if (!out.empty()) out += ',';
    out += r.field;
    out += r.negate ? "!=" : "=";
    append_escaped(out, r.value);
  }
  return out;
}

}  // namespace spotshift::model
