#pragma once
// `filter_labels_test.txt`: (row, label) pairs that must never be predicted, e.g. a query that is
// itself a label (reciprocal pairs). One "row label" pair per line.
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace xmc {

struct FilterPair {
  std::int64_t row;
  std::int32_t label;
  auto operator<=>(const FilterPair&) const = default;
};

/// Pairs sorted by (row, label), looked up per row.
class FilterPairs {
 public:
  FilterPairs() = default;
  explicit FilterPairs(std::vector<FilterPair> pairs);

  bool empty() const { return pairs_.empty(); }
  std::size_t size() const { return pairs_.size(); }
  const std::vector<FilterPair>& pairs() const { return pairs_; }
  /// Labels filtered for `row`, sorted.
  std::vector<std::int32_t> labels_of(std::int64_t row) const;

 private:
  std::vector<FilterPair> pairs_;
};

/// Reads a filter file; rows must be < `rows` and labels < `labels` (checked when >= 0).
FilterPairs read_filter_pairs(const std::filesystem::path& path, std::int64_t rows = -1, std::int64_t labels = -1);
void write_filter_pairs(const std::filesystem::path& path, const FilterPairs& pairs);

}  // namespace xmc
