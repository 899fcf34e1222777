#pragma once
// meta.k8s.io/v1 Table responses for kubectl get: the built-in columns of each kind and a CRD's
// additionalPrinterColumns, with ages rendered by the server as kubectl expects.

#include "core/time.hpp"
#include "json_util.hpp"
#include "resources.hpp"

#include <string>
#include <vector>

namespace spotshift::kubesim {

// The Table for objs; rv and cont go into its metadata.
std::string render_table(const ResourceType& rt, const std::vector<const Value*>& objs, Time now, std::string_view rv,
                         std::string_view cont);

// Evaluates the JSONPath subset printer columns use: .a.b, [N], [*], [?(@.k=="v")].
// Returns the values found (several for [*]).
std::vector<const Value*> json_path(const Value& root, std::string_view path);

// Column definitions and cells, exposed for tests.
struct TableColumn {
  TableColumn(std::string n, std::string t, std::string f = {}, int p = 0)
      : name(std::move(n)), type(std::move(t)), format(std::move(f)), priority(p) {}
  std::string name;
  std::string type;
  std::string format;
  int priority = 0;
};
std::vector<TableColumn> table_columns(const ResourceType& rt);

}  // namespace spotshift::kubesim
