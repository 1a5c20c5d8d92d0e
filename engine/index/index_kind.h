#pragma once
// A registered kind of label index (plain C++). A description is NAME or NAME:PARAMETERS ("exact", "hnsw:M=32",
// "faiss:IVF256,Flat;nprobe=32"); the kind named NAME takes its parameters apart into an IndexRecipe that makes,
// recognises and reads its indexes. Each index's file defines `IndexKind NAME_index_kind()`;
// engine/registry/component_list.h lists them once (XMC_FOR_EACH_INDEX), and index_factory.h makes, checks,
// saves and loads every index through them.
#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/index/index.h"
#include "engine/index/index_file.h"

namespace xmc {

/// What a kind makes of one description.
struct IndexRecipe {
  std::function<std::unique_ptr<Index>(std::int64_t dim)> make;
  /// Whether `index` is what make() makes (save_index() stores the description to rebuild it by).
  std::function<bool(const Index& index)> made_by;
  /// The index saved with this description (index_file.h's payload).
  std::function<std::unique_ptr<Index>(std::istream& payload, const IndexFileHeader& header)> read;
  /// check_index_spec() makes one, as small as it comes, to check parameters only the library can (FAISS).
  bool checked_by_making = false;
};

struct IndexKind {
  std::string name;    ///< NAME of the descriptions it takes
  std::string syntax;  ///< how its descriptions read: "hnsw[:M=16,ef=128,efc=200]"
  std::string help;    ///< one line for help texts
  bool available = true;  ///< false: not in this build (its descriptions are refused, saying why)
  /// Takes apart the `parameters` of the description `spec` (none: no ':' in it). Throws ConfigError
  /// (refuse_index_spec) naming `spec` and what is wrong.
  std::function<IndexRecipe(const std::string& spec, std::optional<std::string_view> parameters)> parse;
};

/// Every registered kind, in the order help texts list them (engine/registry/index_kinds.cpp).
const std::vector<IndexKind>& registered_index_kinds();

/// Throws ConfigError: index: "SPEC" WHY; known: (every registered kind's syntax).
[[noreturn]] void refuse_index_spec(const std::string& spec, const std::string& why);
/// "KEY=N,KEY=N" -> set(key, value) for each, with N a positive whole number; refuses a malformed item and
/// a key given twice.
void parse_index_keys(const std::string& spec, std::string_view text, const std::function<void(const std::string& key, std::int64_t value)>& set);

}  // namespace xmc
