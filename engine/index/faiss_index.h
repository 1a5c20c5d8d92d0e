#pragma once
// Inner-product search through a FAISS index made by faiss::index_factory from a factory string: "Flat"
// (exact), "IVF<n>,Flat" (n inverted lists, exact within the lists probed), "IVF<n>,PQ<m>" (product-
// quantised codes of m bytes), or anything else index_factory takes. See index.h for the conventions.
// Plain C++ header; only built when FAISS is (CMake option XMC_WITH_FAISS).
//
// Trainable indexes (IVF, PQ) learn their lists and codebooks from the vectors of the first add(), or from
// an explicit train() before it. Training k-means centroids needs at least one vector per centroid (FAISS
// refuses fewer) and wants ~39 per centroid (FAISS prints a warning below that): IVF<n> needs n, PQ
// 256 (2^bits per code) training vectors at the very least.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "engine/index/index.h"

namespace faiss {
struct Index;
}

namespace xmc {

struct FaissIndexOptions {
  std::int64_t nprobe = 16;  ///< inverted lists visited per query (IVF indexes): more = better recall, slower
};

class FaissIndex final : public Index {
 public:
  /// Throws ConfigError naming `factory` when FAISS does not accept it for dimension `dim`.
  FaissIndex(std::int64_t dim, const std::string& factory, FaissIndexOptions options = {});
  ~FaissIndex() override;

  /// Trains an index that needs it on n vectors (x: n × dim floats); a no-op for one that needs no
  /// training (Flat) or is trained already. Too few vectors for the index is a ConfigError naming the
  /// factory string and the count, and saying what to use instead.
  void train(std::int64_t n, const float* x);
  bool is_trained() const;

  /// Trains on these vectors first when the index is not trained yet (see train()).
  void add(std::int64_t n, const float* x) override;
  /// Safe to call from several threads at once (not during add, train, reset or set_nprobe).
  void search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const override;
  /// Removes the vectors; a trained index stays trained.
  void reset() override;
  /// The index in FAISS's own format (faiss::write_index).
  void write(std::ostream& out) const override;
  /// What write() wrote (`bytes` of it), made from `factory`. Throws Error when FAISS cannot read it or
  /// it does not rank by inner product.
  static std::unique_ptr<FaissIndex> read(std::istream& in, std::uint64_t bytes, const std::string& factory, FaissIndexOptions options = {});

  /// Changes nprobe for later searches (IVF indexes; others ignore it).
  void set_nprobe(std::int64_t nprobe);
  std::int64_t nprobe() const { return options_.nprobe; }
  const std::string& factory() const { return factory_; }

 private:
  FaissIndex(std::string factory, std::unique_ptr<faiss::Index> index, FaissIndexOptions options);

  std::string factory_;
  std::unique_ptr<faiss::Index> index_;
  FaissIndexOptions options_;
};

}  // namespace xmc
