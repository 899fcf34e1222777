#pragma once
// A pull parser over JSON text. The decoders read each member once, in the order it comes, and
// skip what they do not need, with no document in between: strings come back as views into the
// text (unescaped into the reader's own storage when they hold escapes), numbers as their text.
//
//   JsonReader r(text);
//   std::string_view key;
//   if (r.begin_object())
//     while (r.next_member(key)) {
//       if (key == "name") r.read_string(name);
//       else r.skip();
//     }
//   if (!r.ok()) ... r.error()   // invalid JSON at offset 17: expected ',' or '}' after a member
//
// The whole grammar is checked, skipped values included; once an error is met every call fails
// and nothing more is read. Nesting is limited to kMaxDepth. Like RapidJSON's default, strings are
// not checked for valid UTF-8.

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace spotshift::model {

enum class JsonType : uint8_t { kNull, kBool, kNumber, kString, kObject, kArray, kInvalid };
std::string_view json_type_name(JsonType t);

class JsonReader {
 public:
  static constexpr size_t kMaxDepth = 512;

  explicit JsonReader(std::string_view text);

  // A reader of the elements of an array in `text` from the one starting at offset `at`, as if
  // begin_array() had been read before it: for readers that share a long array, each starting at
  // an element another reader will reach. Offsets in errors count from the start of text.
  static JsonReader in_array(std::string_view text, size_t at);
  // Leaves the array this reader is in, at an element, for where `ahead` (a reader from
  // in_array() over the same text) read that array's closing ']': what lies between was read by
  // `ahead` and the readers before it. False, with an error, if `ahead` has not closed its array.
  bool leave_array(const JsonReader& ahead);

  // The type of the next value, without reading it; kInvalid after an error or at the end.
  JsonType peek() {
    skip_whitespace();
    return p_ == end_ ? JsonType::kInvalid : kTypeOf[static_cast<unsigned char>(*p_)];
  }

  // Reads '{'. Then next_member() reads each member's key and ':' (the caller reads or skips
  // its value) and returns false once it has read the closing '}'.
  bool begin_object();
  bool next_member(std::string_view& key);
  // Reads '['. Then next_element() returns true before each element and false once it has read
  // the closing ']'.
  bool begin_array();
  bool next_element();

  bool read_string(std::string_view& out);
  // A number as written ("2", "-1.5e3"), checked against JSON's grammar.
  bool read_number(std::string_view& text);
  bool read_bool(bool& out);
  bool read_null();
  // Reads the next value whatever it is.
  void skip();
  // The raw text of the next value (it is read).
  bool read_raw(std::string_view& out);
  // The text from the next value to the end, nothing read: for a second reader to look ahead
  // (a list item's kind before the item is decoded).
  std::string_view rest() {
    skip_whitespace();
    return std::string_view(p_, static_cast<size_t>(end_ - p_));
  }
  // True when nothing but whitespace is left; an error otherwise.
  bool finish();

  bool ok() const { return !failed_; }
  // "invalid JSON at offset N: what was wrong"; empty while ok().
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    bool object;
    bool has_items;  // a ',' comes before the next item
  };
  // What each first byte of a value starts (kInvalid for anything else).
  static const std::array<JsonType, 256> kTypeOf;

  bool fail(std::string_view what);
  void skip_whitespace() {
    // Every whitespace byte is at most ' ': one comparison for the usual case of none.
    while (p_ < end_ && static_cast<unsigned char>(*p_) <= ' ' && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool expect(char c, std::string_view what) {
    skip_whitespace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return expected(what);
  }
  // Fails with "expected <what>, found <what is there>".
  bool expected(std::string_view what);
  bool next_item(bool object);
  bool open(char bracket, bool object);
  bool scan_string(std::string_view& out);
  bool unescape(const char* start, std::string_view& out);
  bool literal(std::string_view word);

  const char* begin_;
  const char* p_;
  const char* end_;
  std::vector<Frame> stack_;
  std::deque<std::string> unescaped_;  // stable storage for strings that held escapes
  std::string error_;
  bool failed_ = false;
};

}  // namespace spotshift::model
