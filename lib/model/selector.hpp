#pragma once
// Label selectors (object and string forms), node selector terms, and field selectors.

#include "core/error.hpp"
#include "model/labels.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spotshift::model {

enum class SelectorOp : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kEquals, kNotEquals, kGt, kLt };

std::string_view to_string(SelectorOp op);

// One requirement on a label (or, in node selector matchFields, on a field).
struct Requirement {
  InternedString key;
  SelectorOp op = SelectorOp::kExists;
  std::vector<InternedString> values;  // sorted, for In/NotIn/Equals/NotEquals
  int64_t number = 0;                  // for Gt/Lt

  bool matches(const Labels& labels) const;
  // Matches a single value that is known to be present (matchFields on metadata.name).
  bool matches_value(std::string_view value) const;
  std::string to_string() const;
  bool operator==(const Requirement&) const = default;

  // Validates key and values the way apimachinery does, with a message naming the problem.
  static Result<Requirement> make(std::string_view key, SelectorOp op, std::vector<std::string> values);
};

// A label selector: requirements ANDed. An empty selector matches every object; whether an
// absent selector means "nothing" is the caller's decision (PodDisruptionBudgets say it does).
class LabelSelector {
 public:
  LabelSelector() = default;
  explicit LabelSelector(std::vector<Requirement> requirements);

  // The string syntax of kubectl -l: "a=b,c!=d,e in (x,y),!f,g,h>3". Whitespace is allowed
  // around tokens. Errors name the offending part.
  static Result<LabelSelector> parse(std::string_view text);
  // From matchLabels pairs (validated).
  static Result<LabelSelector> from_map(const std::vector<std::pair<std::string, std::string>>& match_labels);

  bool matches(const Labels& labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }
  // Canonical string: requirements sorted by key, values sorted; parse(to_string()) is identity.
  std::string to_string() const;
  bool operator==(const LabelSelector&) const = default;

 private:
  std::vector<Requirement> requirements_;  // sorted by key
};

// A node selector term: matchExpressions on labels and matchFields on metadata.name, ANDed.
// An empty term matches no node.
struct NodeSelectorTerm {
  std::vector<Requirement> match_expressions;
  std::vector<Requirement> match_fields;
  bool matches(const Labels& node_labels, std::string_view node_name) const;
  bool operator==(const NodeSelectorTerm&) const = default;
};

// Required node affinity: the terms are ORed. No terms matches no node.
struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;
  bool matches(const Labels& node_labels, std::string_view node_name) const;
  bool operator==(const NodeSelector&) const = default;
};

// A field selector: "f=v", "f==v", "f!=v" terms ANDed. Values may escape ',', '=' and '\' with '\'.
struct FieldRequirement {
  std::string field;
  bool negate = false;
  std::string value;
  bool operator==(const FieldRequirement&) const = default;
};

class FieldSelector {
 public:
  static Result<FieldSelector> parse(std::string_view text);
  // The getter returns the object's value for a field, or nothing when the field is unknown.
  bool matches(const std::function<std::optional<std::string>(std::string_view field)>& get) const;
  // The first field the predicate rejects, for "field label not supported: X" errors.
  std::optional<std::string> unsupported(const std::function<bool(std::string_view)>& supported) const;
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }
  bool empty() const { return requirements_.empty(); }
  std::string to_string() const;

 private:
  std::vector<FieldRequirement> requirements_;
};

// Validation helpers shared with the decoders.
std::optional<std::string> validate_label_key(std::string_view key);  // nullopt when valid
std::optional<std::string> validate_label_value(std::string_view value);

}  // namespace spotshift::model
