// The "faiss" index kind: a FAISS index from its index_factory string. Registered in every build; in one
// without FAISS (XMC_WITH_FAISS=OFF) its descriptions are refused, saying so. CMake defines XMC_HAVE_FAISS
// on this file alone when the build has FAISS.
#include "engine/core/error.h"
#include "engine/index/index_factory.h"
#include "engine/index/index_kind.h"
#ifdef XMC_HAVE_FAISS
#include "engine/index/faiss_index.h"
#endif

namespace xmc {

bool faiss_available() {
#ifdef XMC_HAVE_FAISS
  return true;
#else
  return false;
#endif
}

IndexKind faiss_index_kind() {
  return {.name = "faiss",
          .syntax = "faiss:<factory>[;nprobe=16] (faiss:Flat, faiss:IVF256,Flat, faiss:IVF64,PQ8)",
          .help = "a FAISS index_factory string, e.g. faiss:Flat, faiss:IVF256,Flat, faiss:IVF64,PQ8; nprobe = inverted lists probed "
                  "per query (';' separates it: factory strings contain commas)",
          .available = faiss_available(),
          .parse = [](const std::string& spec, std::optional<std::string_view> parameters) -> IndexRecipe {
            const std::string_view rest = parameters.value_or(std::string_view{});
            const auto semicolon = rest.find(';');
            const std::string factory(rest.substr(0, semicolon));
            if (factory.empty()) refuse_index_spec(spec, "names no FAISS factory string after \"faiss:\"");
            std::int64_t nprobe = 16;
            if (semicolon != std::string_view::npos) {
              parse_index_keys(spec, rest.substr(semicolon + 1), [&](const std::string& key, std::int64_t value) {
                if (key != "nprobe") refuse_index_spec(spec, "has the unknown FAISS key \"" + key + "\" (nprobe)");
                nprobe = value;
              });
            }
#ifdef XMC_HAVE_FAISS
            return {.make = [factory, nprobe](std::int64_t dim) -> std::unique_ptr<Index> {
                      return std::make_unique<FaissIndex>(dim, factory, FaissIndexOptions{.nprobe = nprobe});
                    },
                    .made_by =
                        [factory](const Index& index) {
                          const auto* faiss_index = dynamic_cast<const FaissIndex*>(&index);
                          return faiss_index != nullptr && faiss_index->factory() == factory;
                        },
                    .read = [factory, nprobe](std::istream& payload, const IndexFileHeader& header) -> std::unique_ptr<Index> {
                      return FaissIndex::read(payload, header.payload_bytes, factory, {.nprobe = nprobe});
                    },
                    .checked_by_making = true};
#else
            throw ConfigError("index: \"" + spec + "\" needs FAISS, and this build has none (configured with -DXMC_WITH_FAISS=OFF); use exact or hnsw");
#endif
          }};
}

}  // namespace xmc
