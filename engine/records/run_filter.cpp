#include "engine/records/run_filter.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <regex>

#include "engine/config/train_config.h"

namespace xmc {

FilterError::FilterError(std::size_t position, const std::string& reason)
    : Error("filter, at character " + std::to_string(position) + ": " + reason), position_(position) {}

FilterNameKind filter_name_kind(const std::string& name) {
  static const char* const kNumberFields[] = {"id"};
  static const char* const kTextFields[] = {"name", "status", "method", "dataset", "tags", "notes"};
  for (const char* field : kNumberFields)
    if (name == field) return FilterNameKind::number;
  for (const char* field : kTextFields)
    if (name == field) return FilterNameKind::text;
  static const std::regex metric(R"(([A-Za-z0-9_]+/)?(P|nDCG|PSP|PSnDCG|R)@[1-9][0-9]{0,3})");
  if (std::regex_match(name, metric)) return FilterNameKind::number;
  if (const ConfigKeyInfo* key = find_config_key(name)) return key->type == "int" || key->type == "float" ? FilterNameKind::number : FilterNameKind::text;
  return FilterNameKind::unknown;
}

FilterValue filter_value_from_text(FilterNameKind kind, const std::string& text) {
  if (kind == FilterNameKind::text) return text;
  if (kind != FilterNameKind::number) return {};
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return {};
  return value;
}

namespace {

enum class Op { equal, not_equal, less, less_equal, greater, greater_equal, in };

struct Operand {
  std::string name;     ///< "" for a literal
  FilterValue literal;  ///< a number or a text
  FilterNameKind kind = FilterNameKind::unknown;
};

}  // namespace

struct RunFilter::Node {
  enum class Kind { all_of, any_of, negation, comparison } kind = Kind::comparison;
  std::vector<std::shared_ptr<const Node>> children;
  Operand left, right;
  Op op = Op::equal;
};

namespace {

constexpr int kMaxDepth = 200;

struct Token {
  enum class Kind { name, text, number, op, open, close, end } kind = Kind::end;
  std::string text;  ///< the name, the text's contents, the operator or keyword
  double number = 0;
  std::size_t position = 0;  ///< 1-based
};

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '@' || c == '/'; }

std::vector<Token> tokens_of(const std::string& s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    Token t;
    t.position = i + 1;
    if (i == s.size()) {
      out.push_back(t);
      return out;
    }
    const char c = s[i];
    if (c == '(' || c == ')') {
      t.kind = c == '(' ? Token::Kind::open : Token::Kind::close;
      t.text = std::string(1, c);
      ++i;
    } else if (c == '"' || c == '\'') {
      const std::size_t close = s.find(c, i + 1);
      if (close == std::string::npos) throw FilterError(t.position, std::string("the text opened here has no closing ") + c);
      t.kind = Token::Kind::text;
      t.text = s.substr(i + 1, close - i - 1);
      i = close + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || ((c == '-' || c == '.') && i + 1 < s.size() && (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '.'))) {
      const char* begin = s.data() + i;
      const auto [end, error] = std::from_chars(begin, s.data() + s.size(), t.number);
      if (error != std::errc()) throw FilterError(t.position, "\"" + s.substr(i, 12) + "\" is not a number");
      i = static_cast<std::size_t>(end - s.data());
      if (i < s.size() && s[i] == '%') {
        t.number /= 100;
        ++i;
      }
      if (i < s.size() && is_name_char(s[i])) throw FilterError(t.position, "\"" + s.substr(t.position - 1, i + 1 - (t.position - 1)) + "\" is not a number");
      t.kind = Token::Kind::number;
    } else if (is_name_start(c)) {
      std::size_t end = i;
      while (end < s.size() && is_name_char(s[end])) ++end;
      t.text = s.substr(i, end - i);
      t.kind = t.text == "and" || t.text == "or" || t.text == "not" || t.text == "in" ? Token::Kind::op : Token::Kind::name;
      i = end;
    } else {
      static const char* const kOperators[] = {"==", "!=", "<=", ">=", "<", ">"};
      const char* found = nullptr;
      for (const char* op : kOperators)
        if (s.compare(i, std::char_traits<char>::length(op), op) == 0) {
          found = op;
          break;
        }
      if (found == nullptr)
        throw FilterError(t.position, std::string("unexpected \"") + c + "\" (compare with ==, !=, <, <=, >, >= or in; join with and, or, not)");
      t.kind = Token::Kind::op;
      t.text = found;
      i += t.text.size();
    }
    out.push_back(std::move(t));
  }
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Token::Kind::end: return "the end";
    case Token::Kind::text: return "the text \"" + t.text + "\"";
    case Token::Kind::number: return "a number";
    default: return "\"" + t.text + "\"";
  }
}

const char* kind_name(FilterNameKind kind) { return kind == FilterNameKind::number ? "a number" : "a text"; }

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::vector<std::string>& names) : tokens_(std::move(tokens)), names_(names) {}

  std::shared_ptr<const RunFilter::Node> whole() {
    auto node = any_of(0);
    if (peek().kind != Token::Kind::end) throw FilterError(peek().position, "expected and, or or the end, found " + describe(peek()));
    return node;
  }

 private:
  const Token& peek() const { return tokens_[at_]; }
  const Token& take() { return tokens_[at_ < tokens_.size() - 1 ? at_++ : at_]; }
  bool next_is(const char* op) const { return peek().kind == Token::Kind::op && peek().text == op; }

  std::shared_ptr<const RunFilter::Node> joined(RunFilter::Node::Kind kind, const char* op, int depth) {
    auto first = kind == RunFilter::Node::Kind::any_of ? joined(RunFilter::Node::Kind::all_of, "and", depth) : negation(depth);
    if (!next_is(op)) return first;
    auto node = std::make_shared<RunFilter::Node>();
    node->kind = kind;
    node->children.push_back(std::move(first));
    while (next_is(op)) {
      take();
      node->children.push_back(kind == RunFilter::Node::Kind::any_of ? joined(RunFilter::Node::Kind::all_of, "and", depth) : negation(depth));
    }
    return node;
  }
  std::shared_ptr<const RunFilter::Node> any_of(int depth) { return joined(RunFilter::Node::Kind::any_of, "or", depth); }

  std::shared_ptr<const RunFilter::Node> negation(int depth) {
    if (depth > kMaxDepth) throw FilterError(peek().position, "more than " + std::to_string(kMaxDepth) + " nested parentheses or nots");
    if (next_is("not")) {
      take();
      auto node = std::make_shared<RunFilter::Node>();
      node->kind = RunFilter::Node::Kind::negation;
      node->children.push_back(negation(depth + 1));
      return node;
    }
    if (peek().kind == Token::Kind::open) {
      const Token open = take();
      auto inner = any_of(depth + 1);
      if (peek().kind != Token::Kind::close) throw FilterError(peek().position, "expected \")\" to close the \"(\" at character " + std::to_string(open.position) + ", found " + describe(peek()));
      take();
      return inner;
    }
    return comparison();
  }

  Operand operand() {
    const Token t = take();
    Operand out;
    if (t.kind == Token::Kind::number) {
      out.literal = t.number;
      out.kind = FilterNameKind::number;
    } else if (t.kind == Token::Kind::text) {
      out.literal = t.text;
      out.kind = FilterNameKind::text;
    } else if (t.kind == Token::Kind::name) {
      out.kind = filter_name_kind(t.text);
      if (out.kind == FilterNameKind::unknown)
        throw FilterError(t.position, "unknown name \"" + t.text + "\": not a run field (id, name, status, method, dataset, tags, notes), a config key or a metric (P@5, emb/PSP@3)");
      const ConfigKeyInfo* key = find_config_key(t.text);
      out.name = key != nullptr ? key->key : t.text;  // a former key name reads as today's
      if (std::find(names_.begin(), names_.end(), out.name) == names_.end()) names_.push_back(out.name);
    } else {
      throw FilterError(t.position, "expected a name, a number or a text in quotes, found " + describe(t));
    }
    return out;
  }

  std::shared_ptr<const RunFilter::Node> comparison() {
    const std::size_t left_at = peek().position;
    auto node = std::make_shared<RunFilter::Node>();
    node->left = operand();
    const Token op = take();
    static const std::pair<const char*, Op> kOps[] = {{"==", Op::equal}, {"!=", Op::not_equal}, {"<", Op::less},          {"<=", Op::less_equal},
                                                      {">", Op::greater}, {">=", Op::greater_equal}, {"in", Op::in}};
    const auto found = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& entry) { return op.kind == Token::Kind::op && op.text == entry.first; });
    if (found == std::end(kOps)) throw FilterError(op.position, "expected a comparison (==, !=, <, <=, >, >= or in) after the operand at character " + std::to_string(left_at) + ", found " + describe(op));
    node->op = found->second;
    const std::size_t right_at = peek().position;
    node->right = operand();
    if (node->op == Op::in) {
      if (node->left.kind != FilterNameKind::text || node->right.kind != FilterNameKind::text)
        throw FilterError(op.position, "in finds a text in a text (\"base\" in tags), but one side is a number");
    } else if (node->left.kind != node->right.kind) {
      throw FilterError(right_at, "compares " + std::string(kind_name(node->left.kind)) + " with " + kind_name(node->right.kind) +
                                      (node->left.kind == FilterNameKind::text ? " (put the value in quotes: method == \"unidec\")" : ""));
    } else if (node->left.kind == FilterNameKind::text && node->op != Op::equal && node->op != Op::not_equal) {
      throw FilterError(op.position, op.text + " compares numbers; texts compare with ==, != or in");
    }
    return node;
  }

  std::vector<Token> tokens_;
  std::size_t at_ = 0;
  std::vector<std::string>& names_;
};

FilterValue value_of(const Operand& operand, const RunFilter::Lookup& lookup) {
  return operand.name.empty() ? operand.literal : lookup(operand.name, operand.kind);
}

std::string lowered(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool holds(const RunFilter::Node& node, const RunFilter::Lookup& lookup) {
  using Kind = RunFilter::Node::Kind;
  switch (node.kind) {
    case Kind::all_of: return std::all_of(node.children.begin(), node.children.end(), [&](const auto& c) { return holds(*c, lookup); });
    case Kind::any_of: return std::any_of(node.children.begin(), node.children.end(), [&](const auto& c) { return holds(*c, lookup); });
    case Kind::negation: return !holds(*node.children.front(), lookup);
    case Kind::comparison: break;
  }
  const FilterValue left = value_of(node.left, lookup), right = value_of(node.right, lookup);
  if (const auto* a = std::get_if<double>(&left)) {
    const auto* b = std::get_if<double>(&right);
    if (b == nullptr) return false;
    switch (node.op) {
      case Op::equal: return *a == *b;
      case Op::not_equal: return *a != *b;
      case Op::less: return *a < *b;
      case Op::less_equal: return *a <= *b;
      case Op::greater: return *a > *b;
      case Op::greater_equal: return *a >= *b;
      case Op::in: return false;
    }
  }
  const auto* a = std::get_if<std::string>(&left);
  const auto* b = std::get_if<std::string>(&right);
  if (a == nullptr || b == nullptr) return false;  // the run lacks a value
  if (node.op == Op::in) return lowered(*b).find(lowered(*a)) != std::string::npos;
  return (*a == *b) == (node.op == Op::equal);
}

}  // namespace

RunFilter RunFilter::parse(const std::string& expression) {
  RunFilter filter;
  Parser parser(tokens_of(expression), filter.names_);
  filter.root_ = parser.whole();
  return filter;
}

bool RunFilter::matches(const Lookup& lookup) const { return root_ && holds(*root_, lookup); }

bool looks_like_filter_expression(const std::string& text) {
  static const std::regex compares(R"((==|!=|<|>|\sin\s))");
  return std::regex_search(text, compares);
}

}  // namespace xmc
