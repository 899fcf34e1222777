#pragma once
// The part of CEL that CRD validation rules (x-kubernetes-validations) use in spotshift's CRD,
// evaluated the way the apiserver evaluates it: `self`; field selection and indexing; has();
// size(); duration(); the all() and exists() macros; literals (integers, strings, booleans, null,
// lists, maps); !, &&, || (false && error is false, true || error is true, as CEL's commutative
// logic has it), ==, !=, <, <=, >, >=, in, and ?:. Anything else fails to compile, and kubesim
// refuses the CRD: a rule it cannot evaluate is never skipped silently. There is no type checker:
// a rule the apiserver would refuse to compile may evaluate here.

#include "json_util.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spotshift::kubesim::cel {

struct Node;

class Program {
 public:
  static Result<Program> compile(std::string_view rule);
  // The rule's verdict on self, or the evaluation error ("no such key: values").
  Result<bool> eval(const Value& self) const;
  // The verdict with these variables bound (a webhook's matchConditions: object, oldObject);
  // a null pointer binds null.
  Result<bool> eval(const std::vector<std::pair<std::string, const Value*>>& variables) const;

 private:
  std::shared_ptr<const Node> root_;
};

}  // namespace spotshift::kubesim::cel
