#include "engine/index/streaming_top_k.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xmc {
namespace {

constexpr std::int64_t kTwoTo32 = std::int64_t{1} << 32;
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
constexpr std::int64_t kBlock = 32;  // scores compared against the bar at once

// One int64 per (score, key id) that orders like "score descending, then key id ascending" (the larger
// is the better result): high half = the float's bits mapped to an int32 that orders like the float
// (+0.0 added first, so -0.0 and +0.0 are one value), low half = 2^32 - 1 - id.
std::int64_t rank_key(float score, std::int64_t id) {
  score += 0.0f;
  std::int32_t bits;
  std::memcpy(&bits, &score, sizeof bits);
  const std::int32_t ordered = bits ^ ((bits >> 31) & 0x7fffffff);
  return static_cast<std::int64_t>(ordered) * kTwoTo32 + ((kTwoTo32 - 1) - id);
}

float score_of(std::int64_t key) {
  const auto ordered = static_cast<std::int32_t>(key >> 32);  // arithmetic shift: floor division by 2^32
  const std::int32_t bits = ordered ^ ((ordered >> 31) & 0x7fffffff);
  float score;
  std::memcpy(&score, &bits, sizeof score);
  return score;
}

std::int64_t id_of(std::int64_t key) { return (kTwoTo32 - 1) - (key & (kTwoTo32 - 1)); }

// The largest of a block's kBlock = 32 scores (no NaN).
float block_max(const float* block) {
#if defined(__SSE2__)
  __m128 best = _mm_loadu_ps(block);
  for (int v = 1; v < kBlock / 4; ++v) best = _mm_max_ps(best, _mm_loadu_ps(block + 4 * v));
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, best);
  return std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
#else
  float best = block[0];
  for (int t = 1; t < kBlock; ++t) best = std::max(best, block[t]);
  return best;
#endif
}

// Bit t set where block[t] > bar, for the kBlock = 32 scores of a block. Most blocks have no score above
// the bar; the mask lets the few that do skip straight to those scores, without a branch per score.
std::uint32_t above_mask(const float* block, float bar) {
#if defined(__SSE2__)
  const __m128 threshold = _mm_set1_ps(bar);
  std::uint32_t mask = 0;
  for (int v = 0; v < kBlock / 4; ++v)
    mask |= static_cast<std::uint32_t>(_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(block + 4 * v), threshold))) << (4 * v);
  return mask;
#else
  std::uint32_t mask = 0;
  for (int t = 0; t < kBlock; ++t) mask |= static_cast<std::uint32_t>(block[t] > bar) << t;
  return mask;
#endif
}

}  // namespace

std::int64_t StreamingTopK::capacity_for(std::int64_t k) { return std::max<std::int64_t>(4 * k, 64); }

std::int64_t StreamingTopK::bytes_per_row(std::int64_t k) {
  return capacity_for(k) * static_cast<std::int64_t>(sizeof(std::int64_t)) + static_cast<std::int64_t>(sizeof(std::int64_t) + sizeof(float));
}

StreamingTopK::StreamingTopK(std::int64_t rows, std::int64_t k)
    : k_(k),
      capacity_(capacity_for(k)),
      keys_(static_cast<std::size_t>(rows * capacity_)),
      counts_(static_cast<std::size_t>(rows), 0),
      bars_(static_cast<std::size_t>(rows), kMinusInf) {}

void StreamingTopK::shrink(std::int64_t row) {
  std::int64_t* keys = keys_.data() + row * capacity_;
  std::int64_t& count = counts_[static_cast<std::size_t>(row)];
  if (count <= k_) return;
  std::nth_element(keys, keys + (k_ - 1), keys + count, std::greater<>());
  count = k_;
  bars_[static_cast<std::size_t>(row)] = score_of(keys[k_ - 1]);  // the k-th best: later keys must beat it
}

void StreamingTopK::offer(std::int64_t row, const float* scores, std::int64_t first_key, std::int64_t width) {
  if (k_ == 0) return;
  std::int64_t* keys = keys_.data() + row * capacity_;
  std::int64_t& count = counts_[static_cast<std::size_t>(row)];
  float& bar = bars_[static_cast<std::size_t>(row)];
  const std::int64_t blocks = width / kBlock;
  if (count == 0 && bar == kMinusInf && blocks >= k_) {
    // A first bar without ranking anything: the k-th largest block maximum τ. k blocks hold a score ≥ τ,
    // so the row's k-th best is ≥ τ and no score below τ can be a result (one equal to τ can: keep
    // scores ≥ τ, i.e. > the float just below it).
    std::vector<float> maxima(static_cast<std::size_t>(blocks));
    for (std::int64_t b = 0; b < blocks; ++b) maxima[static_cast<std::size_t>(b)] = block_max(scores + b * kBlock);
    std::nth_element(maxima.begin(), maxima.begin() + (k_ - 1), maxima.end(), std::greater<>());
    bar = std::nextafter(maxima[static_cast<std::size_t>(k_ - 1)], kMinusInf);
  }
  auto take = [&](std::int64_t j) {
    if (count == capacity_) {
      shrink(row);
      if (!(scores[j] > bar)) return;
    }
    keys[count++] = rank_key(scores[j], first_key + j);
  };
  std::int64_t j0 = 0;
  for (; j0 + kBlock <= width; j0 += kBlock) {
    const float* block = scores + j0;
    std::uint32_t above = above_mask(block, bar);
    while (above != 0) {  // only the scores above the bar, in key order
      const int t = std::countr_zero(above);
      above &= above - 1;
      if (block[t] > bar) take(j0 + t);  // the bar may have risen since the mask was taken
    }
  }
  for (std::int64_t j = j0; j < width; ++j)
    if (scores[j] > bar) take(j);
}

void StreamingTopK::finish(std::int64_t row, float* scores_out, std::int64_t* ids_out) {
  shrink(row);
  std::int64_t* keys = keys_.data() + row * capacity_;
  const std::int64_t count = counts_[static_cast<std::size_t>(row)];
  std::sort(keys, keys + count, std::greater<>());
  for (std::int64_t j = 0; j < k_; ++j) {
    scores_out[j] = j < count ? score_of(keys[j]) : kMinusInf;
    ids_out[j] = j < count ? id_of(keys[j]) : -1;
  }
}

}  // namespace xmc
