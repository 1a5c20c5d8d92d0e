#include "engine/core/archive_module_code.h"

#include <map>
#include <optional>
#include <set>
#include <string_view>

#include <cctype>

#include "engine/core/error.h"

namespace xmc {
namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (const char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

/// Reads one type at the start of `t` (consumed): a plain type, a container of types (`Tuple[float, float]`, an
/// optimiser's betas), or a class of the archive ("__torch__.X.Module", named in `classes`). False when it is none.
bool read_type(std::string_view& t, std::vector<std::string>& classes, int depth = 0) {
  if (depth > 8) return false;
  std::size_t end = 0;
  while (end < t.size() && (std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '_' || t[end] == '.')) ++end;
  const std::string_view name = t.substr(0, end);
  t.remove_prefix(end);
  static const std::string_view kPlain[] = {"Tensor", "bool", "int", "float", "str", "NoneType", "complex"};
  static const std::string_view kContainers[] = {"Tuple", "List", "Optional", "Dict"};
  if (name.substr(0, 10) == "__torch__.") {
    for (std::size_t start = 0; start <= name.size();) {
      const std::size_t dot = std::min(name.find('.', start), name.size());
      if (!is_identifier(name.substr(start, dot - start))) return false;
      start = dot + 1;
    }
    classes.emplace_back(name);
    return true;
  }
  for (const auto plain : kPlain)
    if (name == plain) return true;
  bool container = false;
  for (const auto c : kContainers) container = container || name == c;
  if (!container || t.empty() || t.front() != '[') return false;
  t.remove_prefix(1);
  for (bool first = true; !t.empty() && t.front() != ']'; first = false) {
    if (!first) {
      if (t.substr(0, 2) != ", ") return false;
      t.remove_prefix(2);
    }
    if (!read_type(t, classes, depth + 1)) return false;
  }
  if (t.empty()) return false;
  t.remove_prefix(1);  // ']'
  return true;
}

/// A whole declared type; `tensor` when it is a tensor (or an optional one), which a parameter or buffer must be.
bool is_type(std::string_view t, std::vector<std::string>& classes, bool& tensor) {
  tensor = t == "Tensor" || t == "Optional[Tensor]";
  return read_type(t, classes) && t.empty();
}

/// `["a", "b", ]` or `[]`: the quoted names, or nothing when it is not such a list.
std::optional<std::vector<std::string>> name_list(std::string_view s) {
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  std::vector<std::string> names;
  while (!s.empty()) {
    if (s.front() != '"') return std::nullopt;
    const std::size_t close = s.find('"', 1);
    if (close == std::string_view::npos || s.substr(close, 3) != "\", ") return std::nullopt;
    names.emplace_back(s.substr(1, close - 1));
    if (names.back().empty() || names.back().find('\\') != std::string::npos) return std::nullopt;
    s = s.substr(close + 3);
  }
  return names;
}

struct ClassBody {
  std::optional<std::vector<std::string>> parameters, buffers;
  std::map<std::string, bool> declared;  // name → is a tensor
  bool annotations = false;              // its `__annotations__ = []` line
  std::size_t line = 0;                  // of its `class` line
};

}  // namespace

bool is_archive_module_code(const std::string& entry) {
  return entry.find("/code/") != std::string::npos && entry.size() > 3 && entry.compare(entry.size() - 3, 3, ".py") == 0;
}

void check_archive_module_code(const std::string& file, const std::vector<std::pair<std::string, std::string>>& code) {
  std::set<std::string> defined;
  std::vector<std::pair<std::string, std::string>> named;  // (class named, where: "entry line N")
  for (const auto& [entry, text] : code) {
    // "archive/code/__torch__/___torch_mangle_0.py" defines classes of module "__torch__.___torch_mangle_0".
    std::string module = entry.substr(entry.find("/code/") + 6);
    module.resize(module.size() - 3);
    for (char& c : module) c = c == '/' ? '.' : c;
    auto damaged = [&, &entry = entry](std::size_t line, const std::string& why) {
      return InputError(file, "is damaged: its module code " + entry + (line ? " line " + std::to_string(line) : std::string()) + ": " + why +
                                  " (LibTorch writes declarations only: `name : Tensor`, `__parameters__ = [...]`)");
    };
    std::optional<ClassBody> body;
    auto close = [&](std::size_t at) {
      if (!body) return;
      if (!body->parameters || !body->buffers) throw damaged(body->line, "a class without its __parameters__ or __buffers__ list");
      std::set<std::string> listed;
      for (const auto* list : {&*body->parameters, &*body->buffers})
        for (const std::string& name : *list) {
          const auto it = body->declared.find(name);
          if (it == body->declared.end() || !it->second) throw damaged(at, "\"" + name + "\" is listed but not declared as a tensor");
          if (!listed.insert(name).second) throw damaged(at, "\"" + name + "\" is listed twice");
        }
      body.reset();
    };
    std::size_t number = 0;
    for (std::size_t start = 0; start < text.size();) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      const std::string_view line(text.data() + start, end - start);
      start = end + 1;
      ++number;
      if (line.empty()) continue;
      if (line.substr(0, 6) == "class ") {
        close(number);
        const std::size_t open = line.find('(');
        if (open == std::string_view::npos || line.substr(open) != "(Module):" || !is_identifier(line.substr(6, open - 6)))
          throw damaged(number, "not a `class Name(Module):` line");
        defined.insert(module + "." + std::string(line.substr(6, open - 6)));
        body = ClassBody{};
        body->line = number;
        continue;
      }
      if (!body || line.substr(0, 2) != "  " || line.size() < 3 || line[2] == ' ') throw damaged(number, "a line outside a class or not indented by two spaces");
      const std::string_view statement = line.substr(2);
      for (const auto& [prefix, list] : {std::pair{std::string_view("__parameters__ = "), &body->parameters},
                                         std::pair{std::string_view("__buffers__ = "), &body->buffers}}) {
        if (statement.substr(0, prefix.size()) != prefix) continue;
        if (*list) throw damaged(number, std::string(prefix.substr(0, prefix.size() - 3)) + " given twice");
        *list = name_list(statement.substr(prefix.size()));
        if (!*list) throw damaged(number, "not a list of quoted names");
        goto next_line;
      }
      if (statement == "__annotations__ = []") {  // before attributes whose names are not identifiers
        if (body->annotations) throw damaged(number, "__annotations__ given twice");
        body->annotations = true;
        continue;
      }
      {
        std::string name, type;
        if (statement.substr(0, 17) == "__annotations__[\"") {
          const std::size_t quote = statement.find("\"] = ", 17);
          if (quote == std::string_view::npos) throw damaged(number, "not an `__annotations__[\"name\"] = Type` line");
          name = std::string(statement.substr(17, quote - 17));
          type = std::string(statement.substr(quote + 5));
          if (name.empty() || name.find_first_of("\"\\") != std::string::npos) throw damaged(number, "not an `__annotations__[\"name\"] = Type` line");
        } else {
          const std::size_t colon = statement.find(" : ");
          if (colon == std::string_view::npos || !is_identifier(statement.substr(0, colon))) throw damaged(number, "not a `name : Type` declaration");
          name = std::string(statement.substr(0, colon));
          type = std::string(statement.substr(colon + 3));
        }
        std::vector<std::string> classes;
        bool tensor = false;
        if (!is_type(type, classes, tensor)) throw damaged(number, "\"" + type + "\" is not a type such an archive declares");
        if (!body->declared.emplace(name, tensor).second) throw damaged(number, "\"" + name + "\" is declared twice");
        for (const std::string& c : classes) named.emplace_back(c, entry + " line " + std::to_string(number));
      }
    next_line:;
    }
    close(number);
  }
  for (const auto& [class_named, where] : named)
    if (!defined.count(class_named)) throw InputError(file, "is damaged: its module code " + where + " names class " + class_named + ", which no code entry defines");
}

}  // namespace xmc
