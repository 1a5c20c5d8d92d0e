#include "engine/index/exact_search.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/index/streaming_top_k.h"

namespace xmc {
namespace {

constexpr std::int64_t kTwoTo32 = std::int64_t{1} << 32;

// One int64 per (score, key id) that orders like "score descending, then key id ascending": the larger
// key is the better result, and no two keys of distinct ids are equal, so top-k over these keys is exact
// and independent of how ties happen to fall. High 32 bits: the float's bit pattern mapped to an int32
// that orders like the float (negative floats get their 31 low bits flipped), after adding +0.0 so that
// -0.0 and +0.0 are one value. Low 32 bits: 2^32 - 1 - id.
torch::Tensor rank_keys(const torch::Tensor& scores, const torch::Tensor& ids) {
  const auto bits = (scores.to(torch::kFloat) + 0.0).contiguous().view(torch::kInt32);
  const auto ordered = torch::bitwise_xor(bits, torch::bitwise_and(torch::bitwise_right_shift(bits, 31), 0x7fffffff));
  return ordered.to(torch::kInt64) * kTwoTo32 + ((kTwoTo32 - 1) - ids);
}

constexpr std::int64_t kNoKey = std::numeric_limits<std::int64_t>::min();  // an empty slot: below every real key

// The score of each rank key (inverse of the high half of rank_keys; the bit map is an involution).
// Empty slots (kNoKey) read as -inf.
torch::Tensor score_of(const torch::Tensor& keys) {
  const auto ordered = torch::bitwise_right_shift(keys, 32).to(torch::kInt32);  // arithmetic shift
  const auto bits = torch::bitwise_xor(ordered, torch::bitwise_and(torch::bitwise_right_shift(ordered, 31), 0x7fffffff));
  return bits.view(torch::kFloat).masked_fill(keys == kNoKey, -std::numeric_limits<float>::infinity());
}

// Scores and ids of rank keys; -inf scores (excluded keys, empty slots) become id -1.
void decode_rank_keys(const torch::Tensor& keys, torch::Tensor& scores, torch::Tensor& ids) {
  scores = score_of(keys);
  ids = (kTwoTo32 - 1) - torch::bitwise_and(keys, kTwoTo32 - 1);
  ids.masked_fill_(scores == -std::numeric_limits<float>::infinity(), -1);
}

// Keys per block in the pruned selection below.
constexpr std::int64_t kBlock = 8;

// Merges one chunk of scores [r, w] (contiguous; column 0 is key `first_key`) into `best` [r, k], the rank
// keys of the best results so far (unordered; kNoKey for empty slots). Chunks must come in ascending key
// order.
//
// Only a few scores of a chunk can matter, and they are found without ranking the chunk: the columns
// (except a tail of fewer than kBlock) form w / kBlock blocks of kBlock strided columns (block j = columns
// j, j + nb, j + 2nb, ...: its maximum is one vectorised pass over the chunk). A score can enter the
// top-k only if it beats the current k-th best — strictly, since its key id is higher than every id seen
// — so only blocks whose maximum beats it are looked into. For the first chunk there is no k-th best
// yet; then the k-th largest block maximum τ bounds it instead (k blocks reach τ, so the k-th best score
// of the chunk is ≥ τ). The scores of the blocks that pass are gathered, and those that pass too are
// ranked exactly and merged.
void merge_chunk(const torch::Tensor& scores, torch::Tensor best, std::int64_t first_key, bool first_chunk) {
  const std::int64_t r = scores.size(0);
  const std::int64_t w = scores.size(1);
  const std::int64_t k = best.size(1);
  const auto ids_of = torch::TensorOptions().dtype(torch::kInt64).device(scores.device());
  const std::int64_t nb = w / kBlock;
  const std::int64_t full = nb * kBlock;
  std::vector<torch::Tensor> parts{best};
  if (nb == 0 || (first_chunk && nb < k)) {
    parts.push_back(rank_keys(scores, torch::arange(first_key, first_key + w, ids_of)));
  } else {
    const auto maxima = scores.narrow(1, 0, full).view({r, kBlock, nb}).amax(1);  // [r, nb]
    // The bar a score must reach: ≥ τ in the first chunk, > the k-th best score so far after it.
    const auto bar = first_chunk ? std::get<0>(maxima.topk(k, 1, true, false)).amin(1, true)
                                 : std::get<0>(score_of(best).min(1, true));
    const auto pairs = (first_chunk ? maxima >= bar : maxima > bar).nonzero();  // [P, 2] (row, block), row-major
    const std::int64_t p = pairs.size(0);
    if (p > 0) {
      const auto pair_row = pairs.select(1, 0);
      const auto columns = (pairs.select(1, 1).unsqueeze(1) + torch::arange(kBlock, ids_of).unsqueeze(0) * nb).view(-1);
      const auto values = scores.reshape(-1).index_select(0, (pair_row * w).repeat_interleave(kBlock) + columns);
      const auto row_bar = bar.squeeze(1).index_select(0, pair_row).repeat_interleave(kBlock);
      const auto pass = (first_chunk ? values >= row_bar : values > row_bar).nonzero().squeeze(1);
      // The passing scores, still grouped by row, into a dense [r, most passing in a row] table of keys.
      const auto rows = pair_row.index_select(0, torch::div(pass, kBlock, "floor"));
      const auto keys = rank_keys(values.index_select(0, pass), columns.index_select(0, pass) + first_key);
      const std::int64_t found = rows.size(0);
      if (found > 0) {
        const auto counts = torch::bincount(rows, {}, r);
        const auto slot = torch::arange(found, ids_of) - (counts.cumsum(0) - counts).index_select(0, rows);
        auto dense = torch::full({r, counts.max().item<std::int64_t>()}, kNoKey, ids_of);
        dense.index_put_({rows, slot}, keys);
        parts.push_back(dense);
      }
    }
    if (full < w) parts.push_back(rank_keys(scores.narrow(1, full, w - full), torch::arange(first_key + full, first_key + w, ids_of)));
  }
  best.copy_(std::get<0>(torch::cat(parts, 1).topk(k, 1, true, false)));
}

void check(bool ok, const std::string& what) {
  if (!ok) throw ConfigError("exact_top_k: " + what);
}

}  // namespace

ExcludeLists ExcludeLists::from_csr(const CsrMatrix& rows) {
  ExcludeLists lists;
  lists.indptr = torch::tensor(rows.indptr, torch::kInt64);
  lists.indices = torch::empty({rows.nnz()}, torch::kInt64);
  if (rows.nnz() > 0) {
    lists.indices.copy_(torch::from_blob(const_cast<std::int32_t*>(rows.indices.data()), {rows.nnz()}, torch::kInt32));
  }
  return lists;
}

void ExcludeLists::check(std::int64_t n, const std::string& who) const {
  if (empty()) return;
  const auto fail = [&](const std::string& what) { throw ConfigError(who + ": " + what); };
  const torch::Tensor ptr = indptr.to(torch::kCPU, torch::kInt64).contiguous();
  if (ptr.dim() != 1 || ptr.size(0) != n + 1) fail("exclude.indptr must have n + 1 = " + std::to_string(n + 1) + " entries");
  const auto* p = ptr.data_ptr<std::int64_t>();
  if (p[0] != 0) fail("exclude.indptr must start at 0");
  for (std::int64_t r = 0; r < n; ++r)
    if (p[r + 1] < p[r]) fail("exclude.indptr must not decrease");
  if (!indices.defined() || indices.dim() != 1 || indices.size(0) < p[n]) fail("exclude.indices is shorter than indptr says");
}

bool has_unit_column_stride(const torch::Tensor& matrix) {
  return matrix.dim() == 2 && (matrix.size(1) <= 1 || matrix.stride(1) == 1) && matrix.stride(0) >= matrix.size(1);
}

torch::Tensor chunk_inner_products(const torch::Tensor& queries, const torch::Tensor& keys) {
#if AT_MKLDNN_ENABLED()
  // Debian's LibTorch calls the system BLAS for torch::mm, which may be the reference BLAS (≈1.5 GFLOP/s);
  // oneDNN's inner product runs at the machine's speed. Same result up to summation order.
  if (queries.is_cpu() && queries.scalar_type() == torch::kFloat && keys.scalar_type() == torch::kFloat &&
      at::hasMKLDNN() && at::globalContext().userEnabledMkldnn() && queries.size(0) > 0 && keys.size(0) > 0) {
    return at::mkldnn_linear(queries.contiguous().to_mkldnn(), keys.contiguous(), {}).to_dense();
  }
#endif
  return torch::mm(queries, keys.t());
}

std::int64_t exact_search_query_chunk(const ExactSearchOptions& options) {
  if (options.query_chunk > 0) return options.query_chunk;
  const std::int64_t block = std::max<std::int64_t>(options.key_chunk, 1) * static_cast<std::int64_t>(sizeof(float));
  return std::max<std::int64_t>(16, memory_budget_part(memory_share::kExactSearchScores) / block);
}

TopK exact_top_k(const torch::Tensor& queries, const torch::Tensor& keys, std::int64_t k, const ExactSearchOptions& options) {
  check(queries.dim() == 2 && keys.dim() == 2, "queries and keys must be 2-D");
  check(queries.size(1) == keys.size(1), "queries have " + std::to_string(queries.size(1)) + " columns, keys " +
                                             std::to_string(keys.size(1)));
  check(queries.device() == keys.device(), "queries and keys are on different devices");
  check(queries.is_floating_point() && keys.is_floating_point(), "queries and keys must be floating point");
  check(k >= 0, "k must be >= 0, got " + std::to_string(k));
  check(options.query_chunk >= 0 && options.key_chunk > 0, "query_chunk must be >= 0 and key_chunk > 0");
  check(keys.size(0) < (std::int64_t{1} << 31), "at most 2^31 - 1 keys");
  torch::NoGradGuard no_grad;

  const std::int64_t n = queries.size(0);
  const std::int64_t m = keys.size(0);
  k = std::min(k, m);
  const auto device = queries.device();
  torch::Tensor q = queries;
  torch::Tensor kv = keys;
  if (device.is_cpu() || q.scalar_type() != kv.scalar_type()) {
    q = q.to(torch::kFloat);
    kv = kv.to(torch::kFloat);
  }
  q = q.contiguous();
  // Keys are read a block of rows at a time: rows spaced wider than their length (a column block of a larger
  // matrix, as UniDEC's de and clf spaces are of its concat matrix) need no copy of the whole.
  if (!has_unit_column_stride(kv)) kv = kv.contiguous();

  TopK out{torch::empty({n, k}, torch::TensorOptions().dtype(torch::kFloat).device(device)),
           torch::empty({n, k}, torch::TensorOptions().dtype(torch::kInt64).device(device))};
  if (n == 0 || k == 0) return out;

  // Exclusions: row offsets on the CPU (to slice per query chunk), key ids on the device.
  const bool exclude = !options.exclude.empty();
  torch::Tensor ex_ptr;
  torch::Tensor ex_ids;
  if (exclude) {
    options.exclude.check(n, "exact_top_k");
    ex_ptr = options.exclude.indptr.to(torch::kCPU, torch::kInt64).contiguous();
    ex_ids = options.exclude.indices.to(device, torch::kInt64);
  }
  const auto* ptr = exclude ? ex_ptr.data_ptr<std::int64_t>() : nullptr;
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const auto ids_of = torch::TensorOptions().dtype(torch::kInt64).device(device);

  const std::int64_t key_chunk = std::min(options.key_chunk, m);
  const std::int64_t query_chunk = exact_search_query_chunk(options);
  for (std::int64_t r0 = 0; r0 < n; r0 += query_chunk) {
    const std::int64_t c = std::min(query_chunk, n - r0);
    const auto q_chunk = q.narrow(0, r0, c);
    torch::Tensor ex_rows;  // chunk-local row of every excluded (row, key) pair of this query chunk
    torch::Tensor ex_cols;
    if (exclude && ptr[r0 + c] > ptr[r0]) {
      ex_cols = ex_ids.slice(0, ptr[r0], ptr[r0 + c]);
      ex_rows = torch::repeat_interleave(ex_ptr.slice(0, r0, r0 + c + 1).diff().to(device));
    }
    if (device.is_cpu()) {
      // One pass over each score, each thread on its own rows (streaming_top_k.h).
      StreamingTopK selector(c, k);
      for (std::int64_t k0 = 0; k0 < m; k0 += key_chunk) {
        const std::int64_t w = std::min(key_chunk, m - k0);
        auto scores = chunk_inner_products(q_chunk, kv.narrow(0, k0, w)).contiguous();
        if (ex_cols.defined()) {
          const auto here = (ex_cols >= k0) & (ex_cols < k0 + w);
          scores.index_put_({ex_rows.masked_select(here), ex_cols.masked_select(here) - k0}, minus_inf);
        }
        const float* chunk = scores.data_ptr<float>();
        at::parallel_for(0, c, 16, [&](std::int64_t begin, std::int64_t end) {
          for (std::int64_t r = begin; r < end; ++r) selector.offer(r, chunk + r * w, k0, w);
        });
      }
      float* score_out = out.scores.data_ptr<float>() + r0 * k;
      std::int64_t* id_out = out.indices.data_ptr<std::int64_t>() + r0 * k;
      at::parallel_for(0, c, 64, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) selector.finish(r, score_out + r * k, id_out + r * k);
      });
      if (options.progress != nullptr) options.progress->update(r0 + c);
      continue;
    }
    auto best = torch::full({c, k}, kNoKey, ids_of);  // rank keys of the best k results so far
    for (std::int64_t k0 = 0; k0 < m; k0 += key_chunk) {
      const std::int64_t w = std::min(key_chunk, m - k0);
      auto scores = chunk_inner_products(q_chunk, kv.narrow(0, k0, w));
      if (ex_cols.defined()) {
        const auto here = (ex_cols >= k0) & (ex_cols < k0 + w);
        scores.index_put_({ex_rows.masked_select(here), ex_cols.masked_select(here) - k0}, minus_inf);
      }
      merge_chunk(scores, best, k0, k0 == 0);
    }
    torch::Tensor scores;
    torch::Tensor ids;
    decode_rank_keys(std::get<0>(best.sort(1, true)), scores, ids);
    out.scores.narrow(0, r0, c).copy_(scores);
    out.indices.narrow(0, r0, c).copy_(ids);
    if (options.progress != nullptr) options.progress->update(r0 + c);
  }
  return out;
}

}  // namespace xmc
