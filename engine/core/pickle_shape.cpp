#include "engine/core/pickle_shape.h"

#include <cstdint>
#include <cstdio>
#include <unordered_set>
#include <vector>

#include "engine/core/error.h"

namespace xmc {

void check_pickle_shape(const std::string& file, const std::string& entry, std::string_view bytes) {
  std::size_t at = 0;
  auto damaged = [&](const std::string& why) {
    return InputError(file, "is damaged: its pickle " + entry + " at byte " + std::to_string(at) + ": " + why);
  };
  // The stack as kinds only: true = a mark, false = a value.
  std::vector<bool> stack;
  std::unordered_set<std::uint64_t> memo;
  auto take = [&](std::size_t n) {
    if (n > bytes.size() - at) throw damaged("an argument runs past the end");
    const std::string_view arg = bytes.substr(at, n);
    at += n;
    return arg;
  };
  auto number = [&](std::size_t n) {
    const std::string_view arg = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(arg[i]);
    return v;
  };
  auto values = [&](std::size_t n, const char* op) {  // the top n entries must be values
    if (stack.size() < n) throw damaged(std::string(op) + " pops more than the stack holds");
    for (std::size_t i = 0; i < n; ++i)
      if (stack[stack.size() - 1 - i]) throw damaged(std::string(op) + " pops a mark");
  };
  auto pop_to_mark = [&](const char* op) {  // the values since the last mark; the mark goes too
    std::size_t count = 0;
    while (!stack.empty() && !stack.back()) stack.pop_back(), ++count;
    if (stack.empty()) throw damaged(std::string(op) + " without a mark");
    stack.pop_back();
    return count;
  };
  auto line = [&]() {  // GLOBAL's module and name: printable, newline-terminated
    const std::size_t end = bytes.find('\n', at);
    if (end == std::string_view::npos || end == at) throw damaged("GLOBAL without its names");
    for (std::size_t i = at; i < end; ++i)
      if (static_cast<unsigned char>(bytes[i]) < 0x20 || static_cast<unsigned char>(bytes[i]) >= 0x7F) throw damaged("GLOBAL with an unprintable name");
    at = end + 1;
  };
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x80) throw damaged("no PROTO opcode first");
  bool stopped = false;
  while (at < bytes.size() && !stopped) {
    const auto op = static_cast<unsigned char>(bytes[at++]);
    switch (op) {
      case 0x80: number(1); if (at != 2) throw damaged("PROTO not first"); break;                     // PROTO
      case 'q': values(1, "BINPUT"); memo.insert(number(1)); break;                                     // BINPUT
      case 'r': values(1, "LONG_BINPUT"); memo.insert(number(4)); break;                                // LONG_BINPUT
      case 'h': if (!memo.count(number(1))) throw damaged("BINGET of nothing stored"); stack.push_back(false); break;
      case 'j': if (!memo.count(number(4))) throw damaged("LONG_BINGET of nothing stored"); stack.push_back(false); break;
      case '(': stack.push_back(true); break;                                                           // MARK
      case '.': if (stack.size() != 1 || stack[0]) throw damaged("STOP with other than one value"); stopped = true; break;
      case 'K': number(1); stack.push_back(false); break;                                               // BININT1
      case 'M': number(2); stack.push_back(false); break;                                               // BININT2
      case 'J': number(4); stack.push_back(false); break;                                               // BININT
      case 0x8a: take(number(1)); stack.push_back(false); break;                                        // LONG1
      case 'G': number(8); stack.push_back(false); break;                                               // BINFLOAT
      case 'N': case 0x88: case 0x89: case ')': case '}': case ']': stack.push_back(false); break;     // NONE, TRUE, FALSE, (), {}, []
      case 'X': take(number(4)); stack.push_back(false); break;                                         // BINUNICODE
      case 0x8c: take(number(1)); stack.push_back(false); break;                                        // SHORT_BINUNICODE
      case 'U': take(number(1)); stack.push_back(false); break;                                         // SHORT_BINSTRING
      case 't': case 'l': pop_to_mark(op == 't' ? "TUPLE" : "LIST"); stack.push_back(false); break;
      case 0x85: values(1, "TUPLE1"); break;
      case 0x86: values(2, "TUPLE2"); stack.pop_back(); break;
      case 0x87: values(3, "TUPLE3"); stack.resize(stack.size() - 2); break;
      case 'd': if (pop_to_mark("DICT") % 2) throw damaged("DICT of an odd number of items"); stack.push_back(false); break;
      case 'a': values(2, "APPEND"); stack.pop_back(); break;
      case 'e': pop_to_mark("APPENDS"); values(1, "APPENDS"); break;
      case 's': values(3, "SETITEM"); stack.resize(stack.size() - 2); break;
      case 'u': if (pop_to_mark("SETITEMS") % 2) throw damaged("SETITEMS of an odd number of items"); values(1, "SETITEMS"); break;
      case 'c': line(); line(); stack.push_back(false); break;                                          // GLOBAL
      case 'R': case 0x81: values(2, op == 'R' ? "REDUCE" : "NEWOBJ"); stack.pop_back(); break;        // REDUCE, NEWOBJ
      case 'b': values(2, "BUILD"); stack.pop_back(); break;
      case 'Q': values(1, "BINPERSID"); break;
      default: --at; throw damaged("opcode 0x" + [&] { char h[3]; std::snprintf(h, sizeof h, "%02x", op); return std::string(h); }() + " is not one LibTorch writes");
    }
  }
  if (!stopped) throw damaged("no STOP");
  if (at != bytes.size()) throw damaged("bytes after STOP");
}

}  // namespace xmc
