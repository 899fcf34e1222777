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

TEST_CASE("resource sums hold at the int64 limits instead of wrapping", "[resources]") {
  ResourceList huge;
  huge.set("cpu", INT64_MAX);  // what Quantity::milli_value gives for "1e20" (cores)
  huge.set("example.com/fpga", INT64_MAX);
  ResourceList small;
  small.set("cpu", 250);
  small.set("example.com/fpga", 1);
  ResourceList sum = huge;
  sum.add(small);
  CHECK(sum.cpu_milli == INT64_MAX);
  CHECK(sum.get("example.com/fpga") == INT64_MAX);
  sum.subtract(small);
  CHECK(sum.cpu_milli == INT64_MAX - 250);
  ResourceList negative;
  negative.set("cpu", INT64_MIN);
  negative.subtract(huge);
  CHECK(negative.cpu_milli == INT64_MIN);
  CHECK(saturating_add(INT64_MAX, 1) == INT64_MAX);
  CHECK(saturating_add(INT64_MIN, -1) == INT64_MIN);
  CHECK(saturating_add(5, -7) == -2);
  CHECK(saturating_add(INT64_MAX, -1, -1) == INT64_MAX);
  CHECK(saturating_add(INT64_MIN, INT64_MAX, -1) == INT64_MIN);
  CHECK(saturating_add(5, 7, -1) == -2);
}
