#pragma once
// Plain C++. Exact top-k of many rows of scores that arrive in column chunks (a query's scores against
// one chunk of keys at a time), in one pass over each score: the CPU selection step of exact search.
//
// Each row keeps a small buffer of candidates and a bar — the k-th best score kept so far. A score can
// only enter the top k if it beats the bar strictly (a later key loses a tie), so the scan compares
// blocks of scores against the bar in a loop the compiler vectorises and looks at single scores only in
// blocks that hold one above it. When the buffer fills, it is cut back to the best k and the bar rises.
// The work is about one comparison per score; a full sort happens once per row, at the end.
//
// Ranking and ties: best score first; equal scores (and +0/-0) by lower key id first, exactly, whatever
// the chunking. Scores must not be NaN; -inf scores are never results.
#include <cstdint>
#include <vector>

namespace xmc {

class StreamingTopK {
 public:
  /// `rows` independent rows, `k` results each (k ≥ 0).
  StreamingTopK(std::int64_t rows, std::int64_t k);

  /// The memory a row takes, for `k` results.
  static std::int64_t bytes_per_row(std::int64_t k);

  /// Offers `width` scores of `row` against keys first_key, first_key + 1, ...; for each row, chunks
  /// must come in ascending key order (first_key < 2^32). Distinct rows may be offered from different
  /// threads at once.
  void offer(std::int64_t row, const float* scores, std::int64_t first_key, std::int64_t width);

  /// The row's best k, best first, into scores_out[0..k) and ids_out[0..k); a row with fewer than k
  /// results is padded with -inf and -1. Ends the row (call once per row, after its last offer).
  void finish(std::int64_t row, float* scores_out, std::int64_t* ids_out);

 private:
  void shrink(std::int64_t row);

  static std::int64_t capacity_for(std::int64_t k);

  std::int64_t k_;
  std::int64_t capacity_;              ///< candidates a row holds before it is cut back to k
  std::vector<std::int64_t> keys_;     ///< [rows × capacity] rank keys (score, then lower id, ordered as int64)
  std::vector<std::int64_t> counts_;   ///< candidates held per row
  std::vector<float> bars_;            ///< per row: a score must be above this to be kept
};

}  // namespace xmc
