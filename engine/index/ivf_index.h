#pragma once
// An inverted-file index (see index.h for the conventions): the stored vectors grouped by spherical k-means into
// about √n clusters, each query searching the vectors of its `probe` nearest clusters only (clustered_search.h).
// Approximate: faster than exact search on many labels, at a recall that depends on how clustered the vectors
// are. The clusters are made on the first search after vectors were added. Plain C++ header.
#include <cstdint>
#include <memory>

#include "engine/index/index.h"

namespace xmc {

class KeyClusters;

struct IvfIndexOptions {
  std::int64_t probe = 64;        ///< clusters searched per query
  std::int64_t cluster_size = 0;  ///< vectors per cluster on average; 0 = ⌈√n⌉ (at least 64)
};

class IvfIndex final : public Index {
 public:
  explicit IvfIndex(std::int64_t dim, IvfIndexOptions options = {});
  /// An index over n rows the caller keeps, in id order: row i is the dim floats at rows + i·row_stride. Nothing is
  /// copied (an evaluation's column block of a 1.3M-label matrix would be 1.3 GB); the rows must not change while the
  /// index lives, and `owner` is held to keep them alive. An add() first copies them in, as an ordinary index holds.
  static std::unique_ptr<IvfIndex> over_rows(std::int64_t dim, IvfIndexOptions options, std::int64_t n, const float* rows, std::int64_t row_stride,
                                             std::shared_ptr<const void> owner);
  ~IvfIndex() override;

  void add(std::int64_t n, const float* x) override;
  void reserve(std::int64_t n) override;
  /// Safe to call from several threads at once (not during add/reset).
  void search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const override;
  void reset() override;
  /// The stored vectors as raw floats (ntotal × dim, row-major); the clusters are made again after reading.
  void write(std::ostream& out) const override;
  static std::unique_ptr<IvfIndex> read(std::istream& in, std::uint64_t bytes, std::int64_t dim, std::int64_t ntotal, IvfIndexOptions options = {});

  const IvfIndexOptions& options() const;
  /// Clusters searched per query from now on (>= 1); the clusters stay as they are. Not during a search.
  void set_probe(std::int64_t probe);
  /// The clusters the stored vectors are grouped into (made now when they are not yet).
  std::int64_t clusters() const;

 private:
  KeyClusters current_clusters() const;  ///< the clusters, made first when there are none

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmc
