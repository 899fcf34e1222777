#include "model/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace spotshift::model {

std::string_view json_type_name(JsonType t) {
  switch (t) {
    case JsonType::kNull:
      return "null";
    case JsonType::kBool:
      return "a boolean";
    case JsonType::kNumber:
      return "a number";
    case JsonType::kString:
      return "a string";
    case JsonType::kObject:
      return "an object";
    case JsonType::kArray:
      return "an array";
    case JsonType::kInvalid:
      break;
  }
  return "invalid JSON";
}

JsonReader::JsonReader(std::string_view text) : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {
  stack_.reserve(16);
}

JsonReader JsonReader::in_array(std::string_view text, size_t at) {
  JsonReader r(text);
  r.p_ = r.begin_ + std::min(at, text.size());
  r.stack_.push_back({false, false});
  return r;
}

bool JsonReader::leave_array(const JsonReader& ahead) {
  if (failed_) return false;
  if (ahead.begin_ != begin_ || ahead.end_ != end_ || !ahead.ok() || !ahead.stack_.empty() || ahead.p_ < p_)
    return fail("leave_array: the reader ahead has not closed its array in the same text");
  if (stack_.empty() || stack_.back().object) return fail("leave_array outside an array");
  stack_.pop_back();
  p_ = ahead.p_;
  return true;
}

bool JsonReader::fail(std::string_view what) {
  if (!failed_) error_ = fmt::format("invalid JSON at offset {}: {}", p_ - begin_, what);
  failed_ = true;
  p_ = end_;  // nothing more is read: peek() sees the end
  return false;
}

bool JsonReader::expected(std::string_view what) {
  return fail(p_ < end_ ? fmt::format("expected {}, found '{}'", what, *p_) : fmt::format("expected {}, found the end", what));
}

const std::array<JsonType, 256> JsonReader::kTypeOf = [] {
  std::array<JsonType, 256> t{};
  t.fill(JsonType::kInvalid);
  t['{'] = JsonType::kObject;
  t['['] = JsonType::kArray;
  t['"'] = JsonType::kString;
  t['t'] = t['f'] = JsonType::kBool;
  t['n'] = JsonType::kNull;
  t['-'] = JsonType::kNumber;
  for (char c = '0'; c <= '9'; ++c) t[static_cast<unsigned char>(c)] = JsonType::kNumber;
  return t;
}();

bool JsonReader::open(char bracket, bool object) {
  if (!ok()) return false;
  skip_whitespace();
  if (stack_.size() >= kMaxDepth) return fail(fmt::format("nested deeper than {} levels", kMaxDepth));
  if (!expect(bracket, object ? "an object" : "an array")) return false;
  stack_.push_back({object, false});
  return true;
}

bool JsonReader::begin_object() { return open('{', true); }

bool JsonReader::begin_array() { return open('[', false); }

// Shared by next_member and next_element: reads the closing bracket (false) or the ',' that
// comes before every item but the first (true).
bool JsonReader::next_item(bool object) {
  if (failed_) return false;
  if (stack_.empty() || stack_.back().object != object) [[unlikely]]
    return fail(object ? "next_member outside an object" : "next_element outside an array");
  skip_whitespace();
  if (p_ < end_ && *p_ == (object ? '}' : ']')) {
    ++p_;
    stack_.pop_back();
    return false;
  }
  Frame& f = stack_.back();
  if (f.has_items) {
    if (p_ == end_ || *p_ != ',') return expected(object ? "',' or '}' after a member" : "',' or ']' after an element");
    ++p_;
  }
  f.has_items = true;
  return true;
}

bool JsonReader::next_member(std::string_view& key) {
  if (!next_item(true)) return false;
  skip_whitespace();
  if (p_ == end_ || *p_ != '"') return expected("a member name in quotes");
  if (!scan_string(key)) return false;
  return expect(':', "':' after a member name");
}

bool JsonReader::next_element() { return next_item(false); }

bool JsonReader::read_string(std::string_view& out) {
  if (peek() != JsonType::kString) return expected("a string");
  return scan_string(out);
}

// p_ is at the opening quote. The scan runs on a local pointer: a member would be stored back
// on every step.
bool JsonReader::scan_string(std::string_view& out) {
  const char* const start = p_ + 1;
  const char* p = start;
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  while (end_ - p >= 16) {
    __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)));
    if (mask != 0) {
      p += __builtin_ctz(static_cast<unsigned>(mask));
      break;
    }
    p += 16;
  }
#endif
  while (p < end_ && *p != '"' && *p != '\\') ++p;
  p_ = p;
  if (p == end_) return fail("a string is not closed");
  if (*p == '\\') return unescape(start, out);
  out = std::string_view(start, static_cast<size_t>(p - start));
  p_ = p + 1;
  return true;
}

namespace {
int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}
}  // namespace

// p_ is at the first backslash of the string that began at start.
bool JsonReader::unescape(const char* start, std::string_view& out) {
  std::string s(start, p_);
  auto hex4 = [&](uint32_t& v) {
    if (end_ - p_ < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) {
      int d = hex_digit(p_[i]);
      if (d < 0) return false;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    p_ += 4;
    return true;
  };
  while (p_ < end_ && *p_ != '"') {
    if (*p_ != '\\') {
      s += *p_++;
      continue;
    }
    if (++p_ == end_) break;
    char c = *p_++;
    switch (c) {
      case '"':
        s += '"';
        break;
      case '\\':
        s += '\\';
        break;
      case '/':
        s += '/';
        break;
      case 'b':
        s += '\b';
        break;
      case 'f':
        s += '\f';
        break;
      case 'n':
        s += '\n';
        break;
      case 'r':
        s += '\r';
        break;
      case 't':
        s += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp)) return fail("\\u is not followed by four hex digits");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return fail("a high surrogate is not followed by a low one");
          p_ += 2;
          if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return fail("a high surrogate is not followed by a low one");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }  // a lone low surrogate is written out as it is, as RapidJSON does
        append_utf8(s, cp);
        break;
      }
      default:
        --p_;
        return fail(fmt::format("invalid escape '\\{}'", c));
    }
  }
  if (p_ == end_) return fail("a string is not closed");
  ++p_;
  out = unescaped_.emplace_back(std::move(s));
  return true;
}

bool JsonReader::read_number(std::string_view& text) {
  if (peek() != JsonType::kNumber) return expected("a number");
  const char* start = p_;
  auto digits = [&] {
    const char* d = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ - d;
  };
  if (*p_ == '-') ++p_;
  if (p_ < end_ && *p_ == '0') ++p_;
  else if (digits() == 0) return fail("a number has no digits");
  if (p_ < end_ && *p_ == '.') {
    ++p_;
    if (digits() == 0) return fail("a number has no digits after its '.'");
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (digits() == 0) return fail("a number has no digits in its exponent");
  }
  text = std::string_view(start, static_cast<size_t>(p_ - start));
  return true;
}

bool JsonReader::literal(std::string_view word) {
  if (static_cast<size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0)
    return fail(fmt::format("expected {}", word));
  p_ += word.size();
  return true;
}

bool JsonReader::read_bool(bool& out) {
  if (peek() != JsonType::kBool) return expected("true or false");
  out = *p_ == 't';
  return literal(out ? "true" : "false");
}

bool JsonReader::read_null() {
  if (peek() != JsonType::kNull) return expected("null");
  return literal("null");
}

void JsonReader::skip() {
  const size_t base = stack_.size();
  std::string_view ignored;
  bool flag;
  for (;;) {
    switch (peek()) {
      case JsonType::kObject:
        begin_object();
        break;
      case JsonType::kArray:
        begin_array();
        break;
      case JsonType::kString:
        scan_string(ignored);
        break;
      case JsonType::kNumber:
        read_number(ignored);
        break;
      case JsonType::kBool:
        read_bool(flag);
        break;
      case JsonType::kNull:
        read_null();
        break;
      case JsonType::kInvalid:
        if (ok()) expected("a value");
        return;
    }
    // Close what is finished; stop at the next value still to read, or once back at base.
    for (;;) {
      if (!ok() || stack_.size() <= base) return;
      if (stack_.back().object ? next_member(ignored) : next_element()) break;
    }
  }
}

bool JsonReader::read_raw(std::string_view& out) {
  skip_whitespace();
  const char* start = p_;
  skip();
  if (!ok()) return false;
  out = std::string_view(start, static_cast<size_t>(p_ - start));
  return true;
}

bool JsonReader::finish() {
  if (!ok()) return false;
  skip_whitespace();
  if (p_ != end_) return fail(fmt::format("unexpected '{}' after the value", *p_));
  return true;
}

}  // namespace spotshift::model
