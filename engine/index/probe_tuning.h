#pragma once
// Plain C++. An inverted file's probe tuned to a recall target on sampled queries, as FAISS's AutoTune picks the
// cheapest operating point that keeps a criterion. One tuning serves evaluations (eval.index auto) and
// hard-negative shortlists (hard.max_probe): the criterion is each mode's recall@10 against exact search.
#include <cstdint>
#include <functional>
#include <vector>

namespace xmc {

struct ProbeTuning {
  std::int64_t first = 64;  ///< the probe tried first
  std::int64_t max = 0;     ///< the largest probe tried
  double target = 0.95;     ///< the recall@10 every mode must keep
};

struct TunedProbe {
  std::int64_t probe = 0;            ///< the probe found; when not reached, the largest tried
  std::vector<double> recall_at_10;  ///< per mode, at `probe`
  bool reached = false;              ///< every mode keeps the target at `probe`
  std::int64_t tries = 0;            ///< probes tried
};

/// Tries `tuning.first`. When every mode keeps the target there, lowers it by a third at a time (at least by one,
/// down to 1) while they still do, so that the search scans less; else raises it by half at a time (at least by one)
/// up to tuning.max until they do. `recall_at(probe)` sets the searches' probe and returns each mode's recall@10 on
/// the sampled queries.
TunedProbe tune_probe(const ProbeTuning& tuning, const std::function<std::vector<double>(std::int64_t probe)>& recall_at);

/// The probe tried after `probe` keeps too little: half as many clusters again (at least one more), at most `cap`.
std::int64_t raised_probe(std::int64_t probe, std::int64_t cap);
/// The probe tried after `probe` keeps enough: a third fewer clusters (at least one fewer), at least 1.
std::int64_t lowered_probe(std::int64_t probe);

}  // namespace xmc
