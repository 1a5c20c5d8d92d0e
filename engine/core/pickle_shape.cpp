#include "engine/core/pickle_shape.h"

#include <cstdio>
#include <memory>
#include <optional>

#include "engine/core/error.h"

namespace xmc {
namespace {

/// What the abstract stack knows of a value: its kind, and the literal where a storage record needs it.
struct Value {
  enum class Kind { Mark, Other, Text, Integer, Global, Tuple } kind = Kind::Other;
  std::string text;                                   ///< Text; Global: "module\nname"
  std::int64_t integer = 0;                           ///< Integer
  std::shared_ptr<const std::vector<Value>> items;    ///< Tuple (shared: a memo read copies no elements)
};

constexpr std::size_t kTupleKept = 8;  ///< longer tuples are kept as values without their items (no storage record is longer)

}  // namespace

std::uint64_t PickledStorage::element_bytes() const {
  static const std::pair<const char*, std::uint64_t> kSizes[] = {
      {"FloatStorage", 4},   {"DoubleStorage", 8}, {"HalfStorage", 2},         {"BFloat16Storage", 2},      {"LongStorage", 8},
      {"IntStorage", 4},     {"ShortStorage", 2},  {"CharStorage", 1},         {"ByteStorage", 1},          {"BoolStorage", 1},
      {"ComplexFloatStorage", 8}, {"ComplexDoubleStorage", 16}, {"ComplexHalfStorage", 4}, {"QInt8Storage", 1}, {"QUInt8Storage", 1},
      {"QInt32Storage", 4}};
  for (const auto& [name, bytes] : kSizes)
    if (type == name) return bytes;
  return 1;
}

std::vector<PickledStorage> check_pickle_shape(const std::string& file, const std::string& entry, std::string_view bytes) {
  std::size_t at = 0, opcode_at = 0;
  auto damaged = [&](const std::string& why) {
    return InputError(file, "is damaged: its pickle " + entry + " at byte " + std::to_string(opcode_at) + ": " + why);
  };
  std::vector<Value> stack, memo;
  std::vector<PickledStorage> storages;
  auto take = [&](std::size_t n) {
    if (n > bytes.size() - at) throw damaged("an argument runs past the end");
    const std::string_view arg = bytes.substr(at, n);
    at += n;
    return arg;
  };
  auto unsigned_number = [&](std::size_t n) {
    const std::string_view arg = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(arg[i]);
    return v;
  };
  auto push_integer = [&](std::int64_t v) { stack.push_back({Value::Kind::Integer, {}, v, nullptr}); };
  auto push_other = [&] { stack.push_back({}); };
  auto values = [&](std::size_t n, const char* op) {  // the top n entries must be values
    if (stack.size() < n) throw damaged(std::string(op) + " pops more than the stack holds");
    for (std::size_t i = 0; i < n; ++i)
      if (stack[stack.size() - 1 - i].kind == Value::Kind::Mark) throw damaged(std::string(op) + " pops a mark");
  };
  auto pop_to_mark = [&](const char* op) {  // the values since the last mark, in order; the mark goes too
    std::size_t mark = stack.size();
    while (mark > 0 && stack[mark - 1].kind != Value::Kind::Mark) --mark;
    if (mark == 0) throw damaged(std::string(op) + " without a mark");
    std::vector<Value> items(std::make_move_iterator(stack.begin() + static_cast<std::ptrdiff_t>(mark)), std::make_move_iterator(stack.end()));
    stack.resize(mark - 1);
    return items;
  };
  auto push_tuple = [&](std::vector<Value> items) {
    Value v{Value::Kind::Tuple, {}, 0, nullptr};
    if (items.size() <= kTupleKept) v.items = std::make_shared<const std::vector<Value>>(std::move(items));
    stack.push_back(std::move(v));
  };
  auto tuple_of_top = [&](std::size_t n, const char* op) {
    values(n, op);
    std::vector<Value> items(std::make_move_iterator(stack.end() - static_cast<std::ptrdiff_t>(n)), std::make_move_iterator(stack.end()));
    stack.resize(stack.size() - n);
    push_tuple(std::move(items));
  };
  auto line = [&]() {  // GLOBAL's module or name: printable, newline-terminated
    const std::size_t end = bytes.find('\n', at);
    if (end == std::string_view::npos || end == at) throw damaged("GLOBAL without its names");
    for (std::size_t i = at; i < end; ++i)
      if (static_cast<unsigned char>(bytes[i]) < 0x20 || static_cast<unsigned char>(bytes[i]) >= 0x7F) throw damaged("GLOBAL with an unprintable name");
    const std::string_view text = bytes.substr(at, end - at);
    at = end + 1;
    return std::string(text);
  };
  auto put = [&](std::uint64_t id, const char* op) {
    values(1, op);
    // LibTorch numbers its memo from 0 in writing order; its reader sizes a table by the id.
    if (id > memo.size()) throw damaged(std::string(op) + " of memo id " + std::to_string(id) + " past the " + std::to_string(memo.size()) + " stored");
    if (id == memo.size()) memo.push_back(stack.back());
    else memo[id] = stack.back();
  };
  auto get = [&](std::uint64_t id, const char* op) {
    if (id >= memo.size()) throw damaged(std::string(op) + " of nothing stored");
    stack.push_back(memo[id]);
  };
  auto persistent_id = [&] {
    values(1, "BINPERSID");
    const Value id = stack.back();
    const auto& items = id.items;
    const auto is = [&](std::size_t i, Value::Kind kind) { return items && i < items->size() && (*items)[i].kind == kind; };
    if (id.kind != Value::Kind::Tuple || !items || items->size() != 5 || !is(0, Value::Kind::Text) || (*items)[0].text != "storage" ||
        !is(1, Value::Kind::Global) || !is(2, Value::Kind::Text) || !is(3, Value::Kind::Text) || !is(4, Value::Kind::Integer))
      throw damaged("a persistent id that is not a storage record (\"storage\", type, key, location, numel)");
    const std::string& type = (*items)[1].text;
    if (type.rfind("torch\n", 0) != 0 || type.size() < 14 || type.compare(type.size() - 7, 7, "Storage") != 0)
      throw damaged("a storage of type \"" + type + "\", not a torch storage");
    if ((*items)[4].integer < 0) throw damaged("a storage of " + std::to_string((*items)[4].integer) + " elements");
    const std::string& key = (*items)[2].text;
    if (key.empty() || key.find_first_of("/\\") != std::string::npos || key == "." || key == "..") throw damaged("a storage key \"" + key + "\" that is not a record name");
    storages.push_back({key, type.substr(6), static_cast<std::uint64_t>((*items)[4].integer)});
    stack.back() = {};
  };
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x80) throw damaged("no PROTO opcode first");
  bool stopped = false;
  while (at < bytes.size() && !stopped) {
    opcode_at = at;
    const auto op = static_cast<unsigned char>(bytes[at++]);
    switch (op) {
      case 0x80: unsigned_number(1); if (opcode_at != 0) throw damaged("PROTO not first"); break;      // PROTO
      case 'q': put(unsigned_number(1), "BINPUT"); break;
      case 'r': put(unsigned_number(4), "LONG_BINPUT"); break;
      case 'h': get(unsigned_number(1), "BINGET"); break;
      case 'j': get(unsigned_number(4), "LONG_BINGET"); break;
      case '(': stack.push_back({Value::Kind::Mark, {}, 0, nullptr}); break;                          // MARK
      case '.': if (stack.size() != 1 || stack[0].kind == Value::Kind::Mark) throw damaged("STOP with other than one value"); stopped = true; break;
      case 'K': push_integer(static_cast<std::int64_t>(unsigned_number(1))); break;                    // BININT1
      case 'M': push_integer(static_cast<std::int64_t>(unsigned_number(2))); break;                    // BININT2
      case 'J': push_integer(static_cast<std::int32_t>(static_cast<std::uint32_t>(unsigned_number(4)))); break;  // BININT
      case 0x8a: {                                                                                      // LONG1
        const std::size_t n = static_cast<std::size_t>(unsigned_number(1));
        const std::string_view digits = take(n);
        std::int64_t v = 0;
        if (n > 0 && n <= 8) {
          std::uint64_t u = 0;
          for (std::size_t i = n; i-- > 0;) u = (u << 8) | static_cast<unsigned char>(digits[i]);
          if (n < 8 && (static_cast<unsigned char>(digits[n - 1]) & 0x80)) u |= ~std::uint64_t{0} << (8 * n);  // sign
          v = static_cast<std::int64_t>(u);
        } else if (n > 8) {
          v = -1;  // beyond 64 bits: no count LibTorch could mean
        }
        push_integer(v);
        break;
      }
      case 'G': take(8); push_other(); break;                                                           // BINFLOAT
      case 'N': case 0x88: case 0x89: case '}': case ']': push_other(); break;                         // NONE, TRUE, FALSE, {}, []
      case ')': push_tuple({}); break;                                                                  // EMPTY_TUPLE
      case 'X': case 0x8c: case 'U': {                                                                  // BINUNICODE, SHORT_BINUNICODE, SHORT_BINSTRING
        const std::string_view text = take(static_cast<std::size_t>(unsigned_number(op == 'X' ? 4 : 1)));
        stack.push_back({Value::Kind::Text, std::string(text), 0, nullptr});
        break;
      }
      case 't': push_tuple(pop_to_mark("TUPLE")); break;
      case 'l': pop_to_mark("LIST"); push_other(); break;
      case 0x85: tuple_of_top(1, "TUPLE1"); break;
      case 0x86: tuple_of_top(2, "TUPLE2"); break;
      case 0x87: tuple_of_top(3, "TUPLE3"); break;
      case 'd': if (pop_to_mark("DICT").size() % 2) throw damaged("DICT of an odd number of items"); push_other(); break;
      case 'a': values(2, "APPEND"); stack.pop_back(); break;
      case 'e': pop_to_mark("APPENDS"); values(1, "APPENDS"); break;
      case 's': values(3, "SETITEM"); stack.resize(stack.size() - 2); break;
      case 'u': if (pop_to_mark("SETITEMS").size() % 2) throw damaged("SETITEMS of an odd number of items"); values(1, "SETITEMS"); break;
      case 'c': {                                                                                       // GLOBAL
        std::string name = line();
        name += "\n" + line();
        stack.push_back({Value::Kind::Global, std::move(name), 0, nullptr});
        break;
      }
      case 'R': case 0x81: values(2, op == 'R' ? "REDUCE" : "NEWOBJ"); stack.pop_back(); stack.back() = {}; break;  // REDUCE, NEWOBJ
      case 'b': values(2, "BUILD"); stack.pop_back(); break;
      case 'Q': persistent_id(); break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        throw damaged(std::string("opcode ") + hex + " is not one LibTorch writes");
      }
    }
  }
  opcode_at = at;
  if (!stopped) throw damaged("no STOP");
  if (at != bytes.size()) throw damaged("bytes after STOP");
  return storages;
}

}  // namespace xmc
