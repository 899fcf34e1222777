#include "core/strings.hpp"

#include "support/catch.hpp"
#include "support/process.hpp"

#include <sys/stat.h>

#include <fstream>
#include <thread>

using namespace spotshift;

TEST_CASE("query strings decode plus as space and reject broken escapes", "[strings]") {
  CHECK(*url_decode("app+in+%28web%2Cagent%29%2C%21multi", true) == "app in (web,agent),!multi");
  CHECK(*url_decode("a+b", false) == "a+b");
  CHECK_FALSE(url_decode("%2", true));
  CHECK_FALSE(url_decode("%zz", true));
  CHECK(url_encode("spec.nodeName=node-a,x") == "spec.nodeName%3Dnode-a%2Cx");
  CHECK(*url_decode(url_encode("a b/c?d=e&f"), true) == "a b/c?d=e&f");
}

TEST_CASE("booleans accept the Kubernetes spellings", "[strings]") {
  for (auto t : {"true", "True", "TRUE", "t", "T", "1"}) CHECK(parse_bool(t) == true);
  for (auto f : {"false", "False", "FALSE", "f", "F", "0"}) CHECK(parse_bool(f) == false);
  CHECK_FALSE(parse_bool("yes").has_value());
  CHECK(parse_int("42") == 42);
  CHECK(parse_int("-7") == -7);
  CHECK_FALSE(parse_int("4x").has_value());
  CHECK_FALSE(parse_int("").has_value());
}

TEST_CASE("base64 round-trips and rejects junk", "[strings]") {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    CHECK(*base64_decode(base64_encode(s)) == s);
  }
  CHECK(base64_encode("hello") == "aGVsbG8=");
  CHECK(*base64_decode("aGVs\nbG8=") == "hello");
  CHECK_FALSE(base64_decode("a$b="));
  CHECK_FALSE(base64_decode("aGVsbG8=x"));
}

TEST_CASE("split, trim and join", "[strings]") {
  auto parts = split("a,,b", ',');
  REQUIRE(parts.size() == 3);
  CHECK(parts[1].empty());
  CHECK(trim("  x y \n") == "x y");
  CHECK(join({"a", "b"}, ", ") == "a, b");
  auto missing = read_file("/nonexistent/file");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message.find("/nonexistent/file") != std::string::npos);
}

TEST_CASE("utf8_prefix cuts at most so many bytes, never inside a character", "[strings]") {
  CHECK(utf8_prefix("abc", 3) == "abc");
  CHECK(utf8_prefix("abcd", 3) == "abc");
  CHECK(utf8_prefix("a\xc3\xa9", 2) == "a");  // é is two bytes: not half of it
  CHECK(utf8_prefix("a\xc3\xa9", 3) == "a\xc3\xa9");
  CHECK(utf8_prefix("\xe2\x82\xac\xe2\x82\xac", 5) == "\xe2\x82\xac");  // two euro signs, three bytes each
  CHECK(utf8_prefix("\xf0\x9f\x98\x80", 3).empty());
  CHECK(utf8_prefix("", 0).empty());
}

TEST_CASE("read_file reads a regular file whole, an empty one, and a pipe to its end", "[strings]") {
  testing::TempDir dir;
  // Larger than one chunk, with NUL bytes and a length that is no multiple of it.
  std::string big;
  for (int i = 0; i < 200000; ++i) big += static_cast<char>(i % 251);
  dir.write("big", big);
  dir.write("empty", "");
  auto read = read_file(dir.file("big"));
  REQUIRE(read);
  CHECK(*read == big);
  auto empty = read_file(dir.file("empty"));
  REQUIRE(empty);
  CHECK(empty->empty());
  // A FIFO has no size: it is read in chunks until the writer closes it.
  const std::string fifo = dir.file("fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << big; });
  auto piped = read_file(fifo);
  writer.join();
  REQUIRE(piped);
  CHECK(*piped == big);
}
