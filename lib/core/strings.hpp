#pragma once
// Small string helpers shared by the client, the simulator and the operator.

#include "core/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spotshift {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);

// s as a JSON string, quotes included: '"' and '\' escaped, and every control character (as
// \n, \r, \t or \u00XX). The one escaper for JSON written by hand (logs, request bodies).
void append_json_string(std::string& out, std::string_view s);
std::string json_quote(std::string_view s);

// The longest prefix of s of at most max_bytes that does not end inside a UTF-8 sequence (a
// limit the API server counts in bytes, met without cutting a character in two).
std::string_view utf8_prefix(std::string_view s, size_t max_bytes);

// Percent-encodes everything outside RFC 3986's unreserved set.
std::string url_encode(std::string_view s);
// Decodes %XX; with plus_is_space (query strings), '+' becomes ' ' as kubectl relies on.
Result<std::string> url_decode(std::string_view s, bool plus_is_space);

// Kubernetes query booleans: true/True/TRUE/t/1 and the false forms.
std::optional<bool> parse_bool(std::string_view s);
std::optional<int64_t> parse_int(std::string_view s);

std::string base64_encode(std::string_view data);
Result<std::string> base64_decode(std::string_view text);

// Reads a whole file; the error names the path.
Result<std::string> read_file(const std::string& path);

}  // namespace spotshift
