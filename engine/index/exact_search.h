#pragma once
// Engine-internal (includes torch). Exact inner-product top-k of many queries over many keys: the core of
// ExactIndex, of hard-negative shortlists ("exact top-100 over label embeddings, positives removed") and of
// retrieval at evaluation time (DESIGN.md sections 2 and 6).
//
// Queries are scored in chunks of `query_chunk` rows against chunks of `key_chunk` keys, so memory is
// O(query_chunk × key_chunk) whatever n and m are; each key chunk is merged into the running top-k as it
// comes. On the CPU each thread streams its rows' scores through a StreamingTopK (about one comparison
// per score; streaming_top_k.h) and the products go through oneDNN when LibTorch has it (the system BLAS
// may be the slow reference one). On other devices a chunk is not ranked as a whole either: one
// vectorised pass takes the maximum of every block of 8 (strided) columns, and only the blocks whose
// maximum beats the running k-th best score are looked into.
//
// Ranking and ties: results are ordered by score, best first; equal scores (and +0/-0) are ordered by
// lower key index first, exactly — also across chunk and block boundaries, so the result does not depend
// on the chunk sizes. Scores must not be NaN.
#include <torch/torch.h>

#include <cstdint>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"

namespace xmc {

/// Per query row, the key ids it must never get back (e.g. its own positives, for hard-negative
/// shortlists), in CSR form: row i excludes indices[indptr[i] .. indptr[i + 1]). Order and repeats within
/// a row do not matter; ids outside [0, m) are ignored.
struct ExcludeLists {
  torch::Tensor indptr;   ///< [n + 1] int64, indptr[0] = 0, non-decreasing; undefined = exclude nothing
  torch::Tensor indices;  ///< [indptr[n]] int64 key ids

  /// The rows of a label matrix as exclusion lists (row i of `rows` excludes its column ids).
  static ExcludeLists from_csr(const CsrMatrix& rows);
  bool empty() const { return !indptr.defined(); }
  /// Throws ConfigError "<who>: ..." unless these are lists for `n` query rows (indptr of n + 1 entries from 0,
  /// never decreasing, indices as long as it says); empty lists always pass.
  void check(std::int64_t n, const std::string& who) const;
};

struct ExactSearchOptions {
  std::int64_t query_chunk = 0;     ///< queries scored at once; 0 = as many as fill the memory budget's share
                                   ///< (engine/core/memory_budget.h): 2048 at the 512 MB default
  std::int64_t key_chunk = 4096;    ///< keys scored at once: a chunk's scores take query_chunk × key_chunk floats
                                   ///< (fastest measured on 2 CPU cores, d = 256, k = 100)
  ExcludeLists exclude;            ///< optional: key ids never returned, per query row
  Progress* progress = nullptr;    ///< optional: told the query rows done after each query chunk, as
                                   ///< units of a task the caller started (total = n)
};

/// The query chunk exact_top_k() uses with `options`: theirs when set, else the memory budget's share for a
/// block of query_chunk × key_chunk float scores (at least 16 queries).
std::int64_t exact_search_query_chunk(const ExactSearchOptions& options);

struct TopK {
  torch::Tensor scores;   ///< [n, k] float32, best first; -inf where a row has fewer than k results
  torch::Tensor indices;  ///< [n, k] int64 key ids (rows of `keys`); -1 where a row has fewer than k results
};

/// Exact top-k of the inner products <queries[i], keys[j]>.
/// @param queries [n, d] floating tensor; keys must be on the same device with the same dtype (float32 on
///                the CPU; half/bfloat16 allowed on CUDA, scores are returned as float32)
/// @param keys    [m, d], m < 2^31
/// @param k       results per query; clamped to m
/// A row gets fewer than k results (padded with index -1, score -inf) only when exclusions leave it
/// fewer than k keys; keys whose score is -inf count as no result. Both outputs live on the queries'
/// device. Never builds the gradient graph.
TopK exact_top_k(const torch::Tensor& queries, const torch::Tensor& keys, std::int64_t k,
                 const ExactSearchOptions& options = {});

/// The bare product queries · keysᵀ of one chunk as exact_top_k computes it ([c, w] scores), exposed so
/// that benchmarks can time the matrix product alone.
torch::Tensor chunk_inner_products(const torch::Tensor& queries, const torch::Tensor& keys);

/// Whether `matrix` (2-D) is rows of adjacent elements, however far apart the rows start: a contiguous matrix or a
/// block of its columns. exact_top_k reads such keys in place.
bool has_unit_column_stride(const torch::Tensor& matrix);

}  // namespace xmc
