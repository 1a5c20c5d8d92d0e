#pragma once
// Approximate inner-product search on an HNSW graph (hnswlib; FAISS's Debian build lacks SIMD, so its
// HNSW is ~10× slower). See index.h for the conventions. Plain C++ header.
#include <cstdint>
#include <memory>

#include "engine/index/index.h"

namespace xmc {

struct HnswIndexOptions {
  std::int64_t M = 16;                 ///< graph links per node (32 for high-recall, high-dimension data)
  std::int64_t ef_construction = 200;  ///< candidate list size while building: larger = better graph, slower add
  std::int64_t ef_search = 128;        ///< candidate list size while searching (at least k is used)
  std::uint64_t seed = 100;            ///< level assignment of inserted vectors
  int num_threads = 0;                 ///< threads for add and search; 0 = all hardware threads.
                                       ///< The graph depends on insertion order, so only 1 is reproducible.
};

class HnswIndex final : public Index {
 public:
  explicit HnswIndex(std::int64_t dim, HnswIndexOptions options = {});
  ~HnswIndex() override;

  void add(std::int64_t n, const float* x) override;
  /// Safe to call from several threads at once (not during add, reset or set_ef_search).
  void search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const override;
  void reset() override;
  /// The graph in hnswlib's own format (nothing for an empty index).
  void write(std::ostream& out) const override;
  /// What write() wrote (`bytes` of it), holding `ntotal` vectors of dimension `dim`; `options` give the
  /// search settings (the graph keeps the M and ef_construction it was built with). Throws Error when the
  /// graph is not readable or does not hold what is said.
  static std::unique_ptr<HnswIndex> read(std::istream& in, std::uint64_t bytes, std::int64_t dim, std::int64_t ntotal, HnswIndexOptions options = {});

  /// Changes ef_search for later searches.
  void set_ef_search(std::int64_t ef);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmc
