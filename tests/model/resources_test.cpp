#include "model/resources.hpp"

#include "support/catch.hpp"

using namespace spotshift::model;

TEST_CASE("resource lists add, subtract and take maxima per resource", "[resources]") {
  ResourceList a;
  a.set("cpu", 500);
  a.set("memory", 1 << 20);
  a.set("nvidia.com/gpu", 1);
  ResourceList b;
  b.set("cpu", 250);
  b.set("hugepages-2Mi", 4 << 20);
  b.set("nvidia.com/gpu", 2);

  ResourceList sum = a;
  sum.add(b);
  CHECK(sum.cpu_milli == 750);
  CHECK(sum.get("nvidia.com/gpu") == 3);
  CHECK(sum.get("hugepages-2Mi") == 4 << 20);
  sum.subtract(b);
  CHECK(sum.get("nvidia.com/gpu") == 1);
  CHECK(sum.get("hugepages-2Mi") == 0);
  CHECK(sum.cpu_milli == 500);

  ResourceList m = a;
  m.max_with(b);
  CHECK(m.cpu_milli == 500);
  CHECK(m.get("nvidia.com/gpu") == 2);
  CHECK(m.get("hugepages-2Mi") == 4 << 20);
  CHECK(a.to_string() == "cpu=500m,memory=1Mi,nvidia.com/gpu=1");
  CHECK(ResourceList{}.is_zero());
  CHECK(is_scalar_resource_name("example.com/foo"));
  CHECK_FALSE(is_scalar_resource_name("cpu"));
}
