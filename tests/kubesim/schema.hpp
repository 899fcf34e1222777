#pragma once
// Structural OpenAPI v3 schemas for custom resources, applied the way a real apiserver does:
// null values of non-nullable fields dropped, unknown fields pruned (and reported for strict
// field validation), defaults applied, then type, required, enum, bounds, length, item-count
// and pattern checks that produce 422 causes with field paths, and the duplicates that
// x-kubernetes-list-type set and map forbid. CEL rules (x-kubernetes-validations) are evaluated
// by cel.hpp's subset of CEL; a CRD with a rule outside it is refused, so a rule kubesim would
// skip cannot pass unnoticed. As in the apiserver, the rules are not evaluated when the object
// has a blocking violation (a wrong type, a value outside an enum, a missing required field, too
// long, too many); it says so in one more cause.

#include "cel.hpp"
#include "json_util.hpp"

#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace spotshift::kubesim {

class Schema {
 public:
  static Result<std::shared_ptr<const Schema>> parse(const Value& openapi);

  // Prunes, defaults and validates v in place. Causes describe every violation; unknown lists
  // the fields pruned (for fieldValidation=Strict).
  void apply(Value& v, Alloc& a, const std::string& path, std::vector<StatusCause>& causes, std::vector<std::string>& unknown) const;
  // For objects at the root: apiVersion, kind and metadata are never pruned.
  void apply_root(Value& v, Alloc& a, std::vector<StatusCause>& causes, std::vector<std::string>& unknown) const;

  const std::vector<std::pair<std::string, std::shared_ptr<const Schema>>>& properties() const { return properties_; }

 private:
  void prune_and_default(Value& v, Alloc& a, const std::string& path, std::vector<std::string>& unknown) const;
  // An object's members: unknown ones dropped (and listed), nulls dropped where not nullable,
  // defaults added; at the root, apiVersion, kind and metadata are left alone.
  void prune_members(Value& v, Alloc& a, const std::string& path, std::vector<std::string>& unknown, bool root) const;
  // Schema violations go to causes, failed CEL rules to cel: the apiserver evaluates the rules
  // only when no blocking violation was found (finish_validation).
  void validate(const Value& v, const std::string& path, std::vector<StatusCause>& causes, std::vector<StatusCause>& cel) const;
  // The duplicates a list of x-kubernetes-list-type set or map may not hold.
  void check_duplicates(const Value& list, const std::string& path, std::vector<StatusCause>& causes) const;
  void finish_validation(std::vector<StatusCause>& causes, std::vector<StatusCause>& cel) const;
  const Schema* property(std::string_view name) const;
  // What is wrong with this schema's default, or "" (also when it has none).
  std::string default_violation() const;

  std::string type_;
  std::vector<std::pair<std::string, std::shared_ptr<const Schema>>> properties_;
  std::shared_ptr<const Schema> items_;
  std::shared_ptr<const Schema> additional_;  // schema for map values
  bool additional_any_ = false;               // additionalProperties: true
  std::vector<std::string> required_;
  std::vector<std::string> enum_json_;  // each allowed value, serialized
  std::optional<double> minimum_, maximum_;
  bool exclusive_minimum_ = false, exclusive_maximum_ = false;
  std::optional<int64_t> min_length_, max_length_, min_items_, max_items_, max_properties_;
  std::string list_type_;               // x-kubernetes-list-type: set, map or atomic
  std::vector<std::string> list_keys_;  // x-kubernetes-list-map-keys
  std::optional<std::regex> pattern_;
  std::string pattern_text_;
  bool nullable_ = false;
  bool int_or_string_ = false;
  bool preserve_unknown_ = false;
  std::optional<std::string> default_json_;
  struct Rule {
    cel::Program program;
    std::string message;  // the rule's message, or the apiserver's "failed rule: RULE"
  };
  std::vector<Rule> rules_;
  bool any_rules_ = false;  // here or below: the CRD has a CEL validator
};

// "spec.x: Invalid value: ..." lines joined the way the apiserver joins them.
std::string join_causes(const std::vector<StatusCause>& causes);

}  // namespace spotshift::kubesim
