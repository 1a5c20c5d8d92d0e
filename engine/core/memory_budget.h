#pragma once
// Plain C++. One memory budget for a process's large temporaries, so that peak RSS is the model, its optimiser
// state and the label embeddings plus this budget, whatever the number of queries or labels:
//   - exact search's block of scores ([query chunk x key chunk] floats)           1/16
//   - an inverted-file search's chunk of queries (a top-k selector a query and thread) 1/4
//   - an evaluation's score spread (float32 and float64 [queries x label chunk])   1/8
//   - UniDEC's scores of a chunk of queries against every label (loss, sampling) 1/16
//   - k-means' assignment scores ([rows x centroids])                             1/8
//   - a shortlist refresh's slice of queries (their ids and scores)               1/16
//   - the hard-negative window's shuffle of a slice (five float64/int64 arrays)   1/8
//   - xrlinear's dense scores of held-out queries against every label             1/16
//   - an evaluation's slice of test queries (their embeddings, every encoder's)  1/8
//   - balanced clustering's float copies of the nodes it splits at once          1/2 (alone: nothing else runs)
// The shares of the temporaries alive at once sum to less than the whole. At the budget of a 24 GB machine
// (512 MB) the score blocks have the sizes they had as constants; a shortlist slice holds 27,962 queries of 100
// (16,384 before) and the window's shuffle 16,777.
#include <cstdint>
#include <string>

namespace xmc {

/// What each temporary may take: the budget divided by this.
namespace memory_share {
inline constexpr int kExactSearchScores = 16;
inline constexpr int kClusteredSearchScores = 4;
inline constexpr int kScoreSpread = 8;
inline constexpr int kUnidecScores = 16;
inline constexpr int kKmeansScores = 8;
inline constexpr int kShortlistSlice = 16;
inline constexpr int kWindowShuffle = 8;
inline constexpr int kFusionScores = 16;
inline constexpr int kClusteringNodes = 2;
inline constexpr int kEvaluationQueries = 8;
}  // namespace memory_share

/// The smallest budget a run may set: below it the temporaries' chunks shrink to a few rows and runs crawl.
inline constexpr std::int64_t kMinMemoryBudgetMb = 32;

/// Throws Error when `bytes` (what `what` needs at once) exceed this machine's physical memory, saying both sizes:
/// an allocation that cannot succeed is named before it is tried, rather than ending in "out of memory".
void require_fits_in_memory(double bytes, const std::string& what);

/// The budget when none is set: 1/16 of the machine's physical memory, between 64 MB and 512 MB.
std::int64_t default_memory_budget_mb();

/// Sets this process's budget in MB; 0 = default_memory_budget_mb(). ConfigError naming `memory_mb` below
/// kMinMemoryBudgetMb or above 1 TB.
void set_memory_budget_mb(std::int64_t megabytes);

/// This process's budget in bytes (the default until set).
std::int64_t memory_budget_bytes();

/// The bytes one temporary may take: the budget / `share` (a memory_share value).
std::int64_t memory_budget_part(int share);

/// "512 MB (1/16 of this machine's 23.4 GB)" or "2048 MB (memory_mb)": for run logs.
std::string describe_memory_budget();

}  // namespace xmc
