#include "engine/index/index_factory.h"

#include <charconv>
#include <set>
#include <string_view>

#include "engine/core/error.h"
#include "engine/index/exact_index.h"
#include "engine/index/hnsw_index.h"
#include "engine/index/index_file.h"
#ifdef XMC_HAVE_FAISS  // set on this file by CMake when the build has FAISS (XMC_WITH_FAISS)
#include "engine/index/faiss_index.h"
#endif

namespace xmc {
namespace {

enum class IndexKind { Exact, Hnsw, Faiss };

/// A description taken apart.
struct ParsedSpec {
  IndexKind kind = IndexKind::Exact;
  HnswIndexOptions hnsw;
  std::string faiss_factory;
  std::int64_t nprobe = 16;
};

// check_index_spec() without a dimension asks FAISS at this one: 1920 = 2^7 · 3 · 5, divisible by every
// usual PQ<m> (m = 1 … 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128), and small enough to allocate nothing big.
constexpr std::int64_t kCheckDim = 1920;

std::string known_kinds() {
  return std::string("known: exact, hnsw[:M=16,ef=128,efc=200], faiss:<factory>[;nprobe=16] (faiss:Flat, faiss:IVF256,Flat, faiss:IVF64,PQ8") +
         (faiss_available() ? ")" : "; not in this build)");
}

[[noreturn]] void refuse(const std::string& spec, const std::string& why) {
  throw ConfigError("index: \"" + spec + "\" " + why + "; " + known_kinds());
}

/// "KEY=N,KEY=N" -> calls set(key, value) for each, with N a positive whole number; no key twice.
template <typename Set>
void parse_keys(const std::string& spec, std::string_view text, Set&& set) {
  std::set<std::string> seen;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) refuse(spec, "has \"" + std::string(item) + "\" where KEY=N was expected");
    const std::string key(item.substr(0, eq));
    const std::string_view value_text = item.substr(eq + 1);
    std::int64_t value = 0;
    const auto parsed = std::from_chars(value_text.data(), value_text.data() + value_text.size(), value);
    if (parsed.ec != std::errc() || parsed.ptr != value_text.data() + value_text.size() || value < 1)
      refuse(spec, "has " + key + "=" + std::string(value_text) + ", which is not a positive whole number");
    if (!seen.insert(key).second) refuse(spec, "gives " + key + " twice");
    set(key, value);
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
}

ParsedSpec parse_spec(const std::string& spec) {
  ParsedSpec p;
  const std::string_view s(spec);
  if (s == "exact") return p;
  if (s == "hnsw" || s.starts_with("hnsw:")) {
    p.kind = IndexKind::Hnsw;
    if (s.size() > 4) {
      parse_keys(spec, s.substr(5), [&](const std::string& key, std::int64_t value) {
        if (key == "M") {
          if (value < 2) refuse(spec, "has M=" + std::to_string(value) + "; an HNSW graph needs M >= 2");
          p.hnsw.M = value;
        } else if (key == "ef") {
          p.hnsw.ef_search = value;
        } else if (key == "efc") {
          p.hnsw.ef_construction = value;
        } else {
          refuse(spec, "has the unknown HNSW key \"" + key + "\" (M, ef, efc)");
        }
      });
    }
    return p;
  }
  if (s.starts_with("faiss:")) {
    p.kind = IndexKind::Faiss;
    const std::string_view rest = s.substr(6);
    const auto semicolon = rest.find(';');
    p.faiss_factory = std::string(rest.substr(0, semicolon));
    if (p.faiss_factory.empty()) refuse(spec, "names no FAISS factory string after \"faiss:\"");
    if (semicolon != std::string_view::npos) {
      parse_keys(spec, rest.substr(semicolon + 1), [&](const std::string& key, std::int64_t value) {
        if (key != "nprobe") refuse(spec, "has the unknown FAISS key \"" + key + "\" (nprobe)");
        p.nprobe = value;
      });
    }
    if (!faiss_available())
      throw ConfigError("index: \"" + spec + "\" needs FAISS, and this build has none (configured with -DXMC_WITH_FAISS=OFF); use exact or hnsw");
    return p;
  }
  refuse(spec, "is not an index description");
}

std::unique_ptr<Index> make_parsed(const ParsedSpec& p, std::int64_t dim) {
  switch (p.kind) {
    case IndexKind::Exact:
      return std::make_unique<ExactIndex>(dim);
    case IndexKind::Hnsw:
      return std::make_unique<HnswIndex>(dim, p.hnsw);
    case IndexKind::Faiss:
#ifdef XMC_HAVE_FAISS
      return std::make_unique<FaissIndex>(dim, p.faiss_factory, FaissIndexOptions{.nprobe = p.nprobe});
#else
      break;  // parse_spec() refused it
#endif
  }
  throw Error("make_index: unhandled index kind");
}

/// Whether `index` is what `p` makes (save_index() stores the description to rebuild it by).
bool is_made_by(const Index& index, const ParsedSpec& p) {
  switch (p.kind) {
    case IndexKind::Exact:
      return dynamic_cast<const ExactIndex*>(&index) != nullptr;
    case IndexKind::Hnsw:
      return dynamic_cast<const HnswIndex*>(&index) != nullptr;
    case IndexKind::Faiss:
#ifdef XMC_HAVE_FAISS
      if (const auto* faiss_index = dynamic_cast<const FaissIndex*>(&index)) return faiss_index->factory() == p.faiss_factory;
#endif
      return false;
  }
  return false;
}

}  // namespace

bool faiss_available() {
#ifdef XMC_HAVE_FAISS
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Index> make_index(const std::string& spec, std::int64_t dim) {
  const ParsedSpec p = parse_spec(spec);
  if (dim <= 0) throw ConfigError("index \"" + spec + "\": the dimension must be > 0, got " + std::to_string(dim));
  return make_parsed(p, dim);
}

void check_index_spec(const std::string& spec, std::int64_t dim) {
  const ParsedSpec p = parse_spec(spec);
  if (p.kind != IndexKind::Faiss) return;
  // FAISS's own parser is the one that knows its factory strings: make one, as small as it comes.
  if (dim > 0) {
    make_parsed(p, dim);
    return;
  }
  try {
    make_parsed(p, kCheckDim);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + " (checked at dimension " + std::to_string(kCheckDim) + ", as the real one is not known yet)");
  }
}

std::vector<std::string> index_kinds() {
  std::string faiss_kind = "faiss:<factory>[;nprobe=16]: a FAISS index_factory string, e.g. faiss:Flat, faiss:IVF256,Flat, faiss:IVF64,PQ8";
  if (!faiss_available()) faiss_kind += " (not in this build)";
  return {"exact: brute-force inner products over every label",
          "hnsw[:M=16,ef=128,efc=200]: HNSW graph (hnswlib), approximate; M links per node, ef/efc search/build list sizes",
          std::move(faiss_kind)};
}

void save_index(const Index& index, const std::string& spec, const std::filesystem::path& path) {
  if (!is_made_by(index, parse_spec(spec)))
    throw ConfigError("save_index: the index to save as " + path.string() + " is not a \"" + spec + "\" index");
  write_index_file(path, spec, index);
}

SavedIndexInfo read_saved_index_info(const std::filesystem::path& path) {
  const IndexFileHeader header = read_index_file_header(path);
  return {header.spec, header.dim, header.ntotal};
}

std::unique_ptr<Index> load_index(const std::filesystem::path& path) {
  return read_index_file(path, [](std::istream& payload, const IndexFileHeader& header) -> std::unique_ptr<Index> {
    const ParsedSpec p = parse_spec(header.spec);
    switch (p.kind) {
      case IndexKind::Exact:
        return ExactIndex::read(payload, header.payload_bytes, header.dim, header.ntotal);
      case IndexKind::Hnsw:
        return HnswIndex::read(payload, header.payload_bytes, header.dim, header.ntotal, p.hnsw);
      case IndexKind::Faiss:
#ifdef XMC_HAVE_FAISS
        return FaissIndex::read(payload, header.payload_bytes, p.faiss_factory, {.nprobe = p.nprobe});
#else
        break;
#endif
    }
    return nullptr;
  });
}

}  // namespace xmc
