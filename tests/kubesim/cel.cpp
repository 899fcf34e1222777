#include "cel.hpp"

#include "core/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <vector>

namespace spotshift::kubesim::cel {

// A value while a rule runs. JSON objects and arrays are copied in when a rule selects them:
// the objects rules look at are small.
struct Val {
  enum class Kind { kError, kNull, kBool, kInt, kDouble, kString, kDuration, kList, kMap };
  Kind kind = Kind::kNull;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;  // a string, or an error's message
  Duration dur{};
  std::vector<Val> list;
  std::vector<std::pair<std::string, Val>> map;

  static Val error(std::string message) {
    Val v;
    v.kind = Kind::kError;
    v.s = std::move(message);
    return v;
  }
  static Val boolean(bool b) {
    Val v;
    v.kind = Kind::kBool;
    v.b = b;
    return v;
  }
  bool is(Kind k) const { return kind == k; }
};

using Kind = Val::Kind;

struct Node {
  enum class Op { kLiteral, kIdent, kSelect, kIndex, kCall, kMacro, kNot, kNegate, kBinary, kCond, kList, kMap };
  Op op = Op::kLiteral;
  std::string name;  // identifier, field, function, macro, operator; a macro's variable in var
  std::string var;
  Val literal;
  std::vector<std::shared_ptr<const Node>> kids;
};

namespace {

using NodePtr = std::shared_ptr<const Node>;
using Op = Node::Op;

Val from_json(const Value& v) {
  Val out;
  if (v.IsBool()) return Val::boolean(v.GetBool());
  if (v.IsInt64()) {
    out.kind = Kind::kInt;
    out.i = v.GetInt64();
  } else if (v.IsNumber()) {
    out.kind = Kind::kDouble;
    out.d = v.GetDouble();
  } else if (v.IsString()) {
    out.kind = Kind::kString;
    out.s.assign(v.GetString(), v.GetStringLength());
  } else if (v.IsArray()) {
    out.kind = Kind::kList;
    for (const auto& e : v.GetArray()) out.list.push_back(from_json(e));
  } else if (v.IsObject()) {
    out.kind = Kind::kMap;
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) out.map.emplace_back(it->name.GetString(), from_json(it->value));
  }
  return out;
}

const Val* member(const Val& m, std::string_view key) {
  for (const auto& [k, v] : m.map)
    if (k == key) return &v;
  return nullptr;
}

bool equal(const Val& a, const Val& b) {
  if (a.is(Kind::kInt) && b.is(Kind::kDouble)) return static_cast<double>(a.i) == b.d;
  if (a.is(Kind::kDouble) && b.is(Kind::kInt)) return a.d == static_cast<double>(b.i);
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return a.b == b.b;
    case Kind::kInt:
      return a.i == b.i;
    case Kind::kDouble:
      return a.d == b.d;
    case Kind::kString:
      return a.s == b.s;
    case Kind::kDuration:
      return a.dur == b.dur;
    case Kind::kList:
      return a.list.size() == b.list.size() && std::equal(a.list.begin(), a.list.end(), b.list.begin(), equal);
    case Kind::kMap:
      return a.map.size() == b.map.size() && std::all_of(a.map.begin(), a.map.end(), [&](const auto& kv) {
               const Val* other = member(b, kv.first);
               return other && equal(kv.second, *other);
             });
    case Kind::kError:
      return false;
  }
  return false;
}

// -1, 0 or 1, or nullopt when the two do not order.
std::optional<int> compare(const Val& a, const Val& b) {
  auto sign = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if ((a.is(Kind::kInt) || a.is(Kind::kDouble)) && (b.is(Kind::kInt) || b.is(Kind::kDouble))) {
    if (a.is(Kind::kInt) && b.is(Kind::kInt)) return sign(a.i, b.i);
    return sign(a.is(Kind::kInt) ? static_cast<double>(a.i) : a.d, b.is(Kind::kInt) ? static_cast<double>(b.i) : b.d);
  }
  if (a.is(Kind::kString) && b.is(Kind::kString)) return sign(a.s, b.s);
  if (a.is(Kind::kDuration) && b.is(Kind::kDuration)) return sign(a.dur, b.dur);
  return std::nullopt;
}

// --- Parsing ------------------------------------------------------------------------------

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<NodePtr> parse() {
    auto n = expr();
    skip_space();
    if (!error_.empty()) return Error::invalid(error_);
    if (pos_ != text_.size()) return Error::invalid(fmt::format("unexpected \"{}\" at {}", text_.substr(pos_, 10), pos_));
    return n;
  }

 private:
  NodePtr make(Op op, std::string name = {}, std::vector<NodePtr> kids = {}) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->name = std::move(name);
    n->kids = std::move(kids);
    return n;
  }
  NodePtr fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return make(Op::kLiteral);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // Consumes tok if it comes next; an identifier-like token must not run on into a name.
  bool accept(std::string_view tok) {
    skip_space();
    if (text_.substr(pos_, tok.size()) != tok) return false;
    size_t end = pos_ + tok.size();
    if (std::isalpha(static_cast<unsigned char>(tok.back())) && end < text_.size() &&
        (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
      return false;
    // "=" alone, "<" before "=", "!" before "=" and "&" or "|" alone are other tokens.
    if ((tok == "<" || tok == ">" || tok == "!") && end < text_.size() && text_[end] == '=') return false;
    pos_ = end;
    return true;
  }
  void expect(std::string_view tok) {
    if (!accept(tok)) fail(fmt::format("expected \"{}\" at {}", tok, pos_));
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_ || std::isdigit(static_cast<unsigned char>(text_[start]))) {
      pos_ = start;
      fail(fmt::format("expected a name at {}", pos_));
      return {};
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  NodePtr expr() {
    auto c = binary_level(0);
    if (!accept("?")) return c;
    auto yes = binary_level(0);
    expect(":");
    auto no = expr();
    return make(Op::kCond, "?:", {c, yes, no});
  }
  // Levels, loosest first: ||, &&, then the relations (which do not chain).
  NodePtr binary_level(int level) {
    static const std::vector<std::vector<std::string_view>> levels = {{"||"}, {"&&"}, {"==", "!=", "<=", ">=", "<", ">", "in"}};
    if (level == static_cast<int>(levels.size())) return unary();
    auto left = binary_level(level + 1);
    for (;;) {
      std::string_view op;
      for (auto candidate : levels[static_cast<size_t>(level)])
        if (accept(candidate)) {
          op = candidate;
          break;
        }
      if (op.empty()) return left;
      left = make(Op::kBinary, std::string(op), {left, binary_level(level + 1)});
      if (level == 2) return left;
    }
  }
  NodePtr unary() {
    if (accept("!")) return make(Op::kNot, "!", {unary()});
    if (accept("-")) return make(Op::kNegate, "-", {unary()});
    return postfix(primary());
  }
  std::vector<NodePtr> arguments(std::string_view close) {
    std::vector<NodePtr> args;
    if (accept(close)) return args;
    do args.push_back(expr());
    while (accept(","));
    expect(close);
    return args;
  }
  NodePtr postfix(NodePtr n) {
    for (;;) {
      if (accept(".")) {
        std::string name = identifier();
        if (accept("(")) {
          if (name != "all" && name != "exists") return fail(fmt::format("kubesim does not evaluate the method {}()", name));
          auto m = std::make_shared<Node>();
          m->op = Op::kMacro;
          m->name = name;
          m->var = identifier();
          expect(",");
          m->kids = {n, expr()};
          expect(")");
          n = m;
        } else {
          n = make(Op::kSelect, name, {n});
        }
      } else if (accept("[")) {
        n = make(Op::kIndex, "[]", {n, expr()});
        expect("]");
      } else {
        return n;
      }
    }
  }
  NodePtr primary() {
    skip_space();
    if (pos_ >= text_.size()) return fail("unexpected end of the rule");
    char c = text_[pos_];
    if (accept("(")) {
      auto n = expr();
      expect(")");
      return n;
    }
    if (accept("[")) return make(Op::kList, "[]", arguments("]"));
    if (accept("{")) {
      std::vector<NodePtr> kv;
      if (!accept("}")) {
        do {
          kv.push_back(expr());
          expect(":");
          kv.push_back(expr());
        } while (accept(","));
        expect("}");
      }
      return make(Op::kMap, "{}", std::move(kv));
    }
    if (c == '\'' || c == '"') {
      size_t end = text_.find(c, pos_ + 1);
      if (end == std::string_view::npos) return fail("unterminated string");
      auto n = std::make_shared<Node>();
      n->literal.kind = Kind::kString;
      n->literal.s = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
      if (n->literal.s.find('\\') != std::string::npos) return fail("kubesim does not evaluate escapes in strings");
      pos_ = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      auto n = std::make_shared<Node>();
      n->literal.kind = Kind::kInt;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        n->literal.i = n->literal.i * 10 + (text_[pos_++] - '0');
      return n;
    }
    std::string name = identifier();
    auto n = std::make_shared<Node>();
    if (name == "true" || name == "false") {
      n->literal = Val::boolean(name == "true");
      return n;
    }
    if (name == "null") return n;
    if (accept("(")) {
      if (name != "has" && name != "size" && name != "duration")
        return fail(fmt::format("kubesim does not evaluate the function {}()", name));
      auto args = arguments(")");
      if (args.size() != 1) return fail(fmt::format("{}() takes one argument", name));
      if (name == "has" && args[0]->op != Op::kSelect) return fail("has() takes a field selection");
      return make(Op::kCall, name, std::move(args));
    }
    return make(Op::kIdent, name);
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

// --- Evaluation ---------------------------------------------------------------------------

using Scope = std::vector<std::pair<std::string, const Val*>>;

Val eval(const Node& n, const Scope& scope);

Val select(const Val& obj, const std::string& field) {
  if (obj.is(Kind::kError)) return obj;
  if (!obj.is(Kind::kMap)) return Val::error(fmt::format("no such key: {}", field));
  const Val* v = member(obj, field);
  return v ? *v : Val::error(fmt::format("no such key: {}", field));
}

Val call(const Node& n, const Scope& scope) {
  if (n.name == "has") {
    Val obj = eval(*n.kids[0]->kids[0], scope);
    if (obj.is(Kind::kError)) return obj;
    if (!obj.is(Kind::kMap)) return Val::error("has() on a value that is not an object or a map");
    return Val::boolean(member(obj, n.kids[0]->name) != nullptr);
  }
  Val arg = eval(*n.kids[0], scope);
  if (arg.is(Kind::kError)) return arg;
  Val out;
  if (n.name == "size") {
    out.kind = Kind::kInt;
    if (arg.is(Kind::kString)) {
      for (unsigned char ch : arg.s) out.i += (ch & 0xC0) != 0x80;  // code points
    } else if (arg.is(Kind::kList)) {
      out.i = static_cast<int64_t>(arg.list.size());
    } else if (arg.is(Kind::kMap)) {
      out.i = static_cast<int64_t>(arg.map.size());
    } else {
      return Val::error("no matching overload for size()");
    }
    return out;
  }
  if (!arg.is(Kind::kString)) return Val::error("no matching overload for duration()");
  auto d = parse_go_duration(arg.s);
  if (!d) return Val::error(fmt::format("invalid duration \"{}\"", arg.s));
  out.kind = Kind::kDuration;
  out.dur = *d;
  return out;
}

Val macro(const Node& n, const Scope& scope) {
  Val range = eval(*n.kids[0], scope);
  if (range.is(Kind::kError)) return range;
  std::vector<Val> elements;
  if (range.is(Kind::kList)) {
    elements = range.list;
  } else if (range.is(Kind::kMap)) {
    for (const auto& kv : range.map) {
      Val key;
      key.kind = Kind::kString;
      key.s = kv.first;
      elements.push_back(std::move(key));
    }
  } else {
    return Val::error(fmt::format("{}() on a value that is not a list or a map", n.name));
  }
  const bool all = n.name == "all";
  std::optional<Val> error;
  for (const auto& e : elements) {
    Scope inner = scope;
    inner.emplace_back(n.var, &e);
    Val r = eval(*n.kids[1], inner);
    if (r.is(Kind::kBool)) {
      if (r.b != all) return Val::boolean(!all);  // a false for all(), a true for exists()
    } else if (!error) {
      error = r.is(Kind::kError) ? r : Val::error("no matching overload: the predicate is not a bool");
    }
  }
  return error ? *error : Val::boolean(all);
}

Val logical(const Node& n, const Scope& scope) {
  const bool is_and = n.name == "&&";
  Val left = eval(*n.kids[0], scope);
  if (left.is(Kind::kBool) && left.b != is_and) return left;  // false && _, true || _
  Val right = eval(*n.kids[1], scope);
  if (right.is(Kind::kBool) && right.b != is_and) return right;
  if (left.is(Kind::kError)) return left;
  if (right.is(Kind::kError)) return right;
  if (!left.is(Kind::kBool) || !right.is(Kind::kBool)) return Val::error(fmt::format("no matching overload for {}", n.name));
  return Val::boolean(is_and);
}

Val binary(const Node& n, const Scope& scope) {
  if (n.name == "&&" || n.name == "||") return logical(n, scope);
  Val a = eval(*n.kids[0], scope);
  if (a.is(Kind::kError)) return a;
  Val b = eval(*n.kids[1], scope);
  if (b.is(Kind::kError)) return b;
  if (n.name == "==") return Val::boolean(equal(a, b));
  if (n.name == "!=") return Val::boolean(!equal(a, b));
  if (n.name == "in") {
    if (b.is(Kind::kList)) return Val::boolean(std::any_of(b.list.begin(), b.list.end(), [&](const Val& e) { return equal(a, e); }));
    if (b.is(Kind::kMap) && a.is(Kind::kString)) return Val::boolean(member(b, a.s) != nullptr);
    return Val::error("no matching overload for in");
  }
  auto c = compare(a, b);
  if (!c) return Val::error(fmt::format("no matching overload for {}", n.name));
  if (n.name == "<") return Val::boolean(*c < 0);
  if (n.name == "<=") return Val::boolean(*c <= 0);
  if (n.name == ">") return Val::boolean(*c > 0);
  return Val::boolean(*c >= 0);
}

Val eval(const Node& n, const Scope& scope) {
  switch (n.op) {
    case Op::kLiteral:
      return n.literal;
    case Op::kIdent:
      for (auto it = scope.rbegin(); it != scope.rend(); ++it)
        if (it->first == n.name) return *it->second;
      return Val::error(fmt::format("undeclared reference to '{}'", n.name));
    case Op::kSelect:
      return select(eval(*n.kids[0], scope), n.name);
    case Op::kIndex: {
      Val c = eval(*n.kids[0], scope);
      Val k = eval(*n.kids[1], scope);
      if (c.is(Kind::kError)) return c;
      if (k.is(Kind::kError)) return k;
      if (c.is(Kind::kMap) && k.is(Kind::kString)) return select(c, k.s);
      if (c.is(Kind::kList) && k.is(Kind::kInt)) {
        if (k.i < 0 || k.i >= static_cast<int64_t>(c.list.size())) return Val::error(fmt::format("index out of bounds: {}", k.i));
        return c.list[static_cast<size_t>(k.i)];
      }
      return Val::error("no matching overload for _[_]");
    }
    case Op::kCall:
      return call(n, scope);
    case Op::kMacro:
      return macro(n, scope);
    case Op::kNot: {
      Val v = eval(*n.kids[0], scope);
      if (v.is(Kind::kError)) return v;
      return v.is(Kind::kBool) ? Val::boolean(!v.b) : Val::error("no matching overload for !_");
    }
    case Op::kNegate: {
      Val v = eval(*n.kids[0], scope);
      if (v.is(Kind::kInt)) v.i = -v.i;
      else if (v.is(Kind::kDouble)) v.d = -v.d;
      else if (!v.is(Kind::kError)) return Val::error("no matching overload for -_");
      return v;
    }
    case Op::kBinary:
      return binary(n, scope);
    case Op::kCond: {
      Val c = eval(*n.kids[0], scope);
      if (c.is(Kind::kError)) return c;
      if (!c.is(Kind::kBool)) return Val::error("no matching overload for _?_:_");
      return eval(*n.kids[c.b ? 1 : 2], scope);
    }
    case Op::kList: {
      Val out;
      out.kind = Kind::kList;
      for (const auto& k : n.kids) {
        out.list.push_back(eval(*k, scope));
        if (out.list.back().is(Kind::kError)) return out.list.back();
      }
      return out;
    }
    case Op::kMap: {
      Val out;
      out.kind = Kind::kMap;
      for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
        Val k = eval(*n.kids[i], scope);
        if (!k.is(Kind::kString)) return k.is(Kind::kError) ? k : Val::error("kubesim evaluates maps with string keys only");
        out.map.emplace_back(k.s, eval(*n.kids[i + 1], scope));
      }
      return out;
    }
  }
  return Val::error("unknown expression");
}

}  // namespace

Result<Program> Program::compile(std::string_view rule) {
  auto root = Parser(rule).parse();
  if (!root) return root.error();
  Program p;
  p.root_ = *root;
  return p;
}

Result<bool> Program::eval(const Value& self) const { return eval({{"self", &self}}); }

Result<bool> Program::eval(const std::vector<std::pair<std::string, const Value*>>& variables) const {
  std::vector<Val> values;
  values.reserve(variables.size());
  Scope scope;
  for (const auto& [name, v] : variables) {
    values.push_back(v ? from_json(*v) : Val{});
    scope.emplace_back(name, &values.back());
  }
  Val r = cel::eval(*root_, scope);
  if (r.is(Kind::kError)) return Error::invalid(r.s);
  if (!r.is(Kind::kBool)) return Error::invalid("the rule's result is not a bool");
  return r.b;
}

}  // namespace spotshift::kubesim::cel
