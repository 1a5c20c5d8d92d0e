#include "engine/index/index_factory.h"

#include <string_view>

#include "engine/core/error.h"
#include "engine/index/index_file.h"
#include "engine/index/index_kind.h"

namespace xmc {
namespace {

// check_index_spec() without a dimension makes a kind that checks by making at this one: 1920 = 2^7 · 3 · 5,
// divisible by every usual PQ<m> (m = 1 … 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128), and small enough to
// allocate nothing big.
constexpr std::int64_t kCheckDim = 1920;

/// A description taken apart by the kind its NAME (before the first ':') names.
IndexRecipe parse_spec(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  for (const IndexKind& kind : registered_index_kinds())
    if (kind.name == name)
      return kind.parse(spec, colon == std::string::npos ? std::nullopt : std::optional<std::string_view>(std::string_view(spec).substr(colon + 1)));
  refuse_index_spec(spec, "is not an index description");
}

}  // namespace

std::unique_ptr<Index> make_index(const std::string& spec, std::int64_t dim) {
  const IndexRecipe recipe = parse_spec(spec);
  if (dim <= 0) throw ConfigError("index \"" + spec + "\": the dimension must be > 0, got " + std::to_string(dim));
  return recipe.make(dim);
}

void check_index_spec(const std::string& spec, std::int64_t dim) {
  const IndexRecipe recipe = parse_spec(spec);
  if (!recipe.checked_by_making) return;
  // The library's own parser is the one that knows its strings: make one, as small as it comes.
  if (dim > 0) {
    recipe.make(dim);
    return;
  }
  try {
    recipe.make(kCheckDim);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + " (checked at dimension " + std::to_string(kCheckDim) + ", as the real one is not known yet)");
  }
}

std::vector<std::string> index_kinds() {
  std::vector<std::string> out;
  for (const IndexKind& kind : registered_index_kinds())
    out.push_back(kind.syntax.substr(0, kind.syntax.find(" (")) + ": " + kind.help + (kind.available ? "" : " (not in this build)"));
  return out;
}

void save_index(const Index& index, const std::string& spec, const std::filesystem::path& path) {
  if (!parse_spec(spec).made_by(index))
    throw ConfigError("save_index: the index to save as " + path.string() + " is not a \"" + spec + "\" index");
  write_index_file(path, spec, index);
}

SavedIndexInfo read_saved_index_info(const std::filesystem::path& path) {
  const IndexFileHeader header = read_index_file_header(path);
  return {header.spec, header.dim, header.ntotal};
}

std::unique_ptr<Index> load_index(const std::filesystem::path& path) {
  return read_index_file(path, [](std::istream& payload, const IndexFileHeader& header) -> std::unique_ptr<Index> {
    return parse_spec(header.spec).read(payload, header);
  });
}

}  // namespace xmc
