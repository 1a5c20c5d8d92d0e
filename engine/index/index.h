#pragma once
// Public plain-C++ interface of the vector indexes (FAISS's `Index` in miniature), for the GUI, the CLI
// and the engine alike. No torch here.
//
// Conventions, stated once for every index:
//   - Batch first: every call takes n vectors at once as one compact row-major n × d float buffer.
//   - Similarity is the inner product; larger is better; results come best first.
//   - Labels are the 0-based positions in insertion order: the i-th vector ever added (since the last
//     reset) has label i.
//   - A query with fewer than k results is padded with label -1 and score -infinity.
#include <cstdint>
#include <iosfwd>

namespace xmc {

class Index {
 public:
  explicit Index(std::int64_t dim) : dim_(dim) {}
  virtual ~Index() = default;
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  /// Adds n vectors, labelled ntotal() .. ntotal() + n - 1.
  /// @param x input vectors, size n * dim()
  virtual void add(std::int64_t n, const float* x) = 0;

  /// Room for `n` vectors in all, so that adding up to them does not move the ones stored (a hint; the default
  /// does nothing). Adding a large matrix in pieces after it keeps memory at one copy.
  virtual void reserve(std::int64_t n) { (void)n; }

  /// The k best stored vectors for each of n queries.
  /// @param x      query vectors, size n * dim()
  /// @param scores output inner products, size n * k, best first per query
  /// @param labels output labels, size n * k
  virtual void search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const = 0;

  /// Removes every stored vector.
  virtual void reset() = 0;

  /// Writes what the index holds (vectors, graph, lists) to `out` in the index's own format, read back by
  /// the index's static read(). save_index() (index_factory.h) frames it with the description (kind,
  /// dimension, size, checksum) that load_index() needs; use those, not this, to store an index.
  virtual void write(std::ostream& out) const = 0;

  std::int64_t dim() const { return dim_; }
  std::int64_t ntotal() const { return ntotal_; }

 protected:
  std::int64_t dim_;
  std::int64_t ntotal_ = 0;
};

}  // namespace xmc
