#pragma once
// Stored evaluations name every inference mode's metrics "<prefix>/<metric>" ("emb/P@5"), the primary
// mode's included, and the primary mode's once more without a prefix ("P@5": what tables and `xmc runs`
// rank by). The primary can change during a run (NGAME: the embedding in M1, the fused ranking from M4 on),
// so the unprefixed curve alone joins two different rankings. These split the points by mode.
#include <string>
#include <utility>
#include <vector>

#include "engine/records/run_records.h"

namespace xmc {

/// One inference mode's points, their metrics without the prefix ("P@5"). `mode` is the prefix ("emb",
/// "fused"); "" for unprefixed points that no mode's points repeat (runs stored before modes were named).
struct ModeSeries {
  std::string mode;
  std::vector<EvalPoint> points;
  /// The mode was the primary at one evaluation or more (NGAME: the embedding through M1, the fused ranking from
  /// M4): what a view draws by default, so that a run's headline curve never shrinks to the last stage's points.
  bool primary_at_some_evaluation = false;
};

/// The points of every mode, in order of first appearance, the primary mode of the last evaluation first.
/// At each evaluation the primary mode is the one whose points repeat every unprefixed point; unprefixed
/// points are left out where there is one (they are in its series).
std::vector<ModeSeries> series_by_mode(const std::vector<EvalPoint>& points);

/// The prefix of the mode whose points repeat the unprefixed ones at the last evaluation ("" when none):
/// that mode is the run's primary one, already shown under the plain metric names.
std::string final_primary_mode(const std::vector<EvalPoint>& points);

/// The last stored value of `metric` ("P@5": the primary mode's), NaN when the run never reported it.
double final_value(const std::vector<EvalPoint>& points, const std::string& metric);

/// `points` without the primary mode's prefixed copies, evaluation by evaluation (for tables that show the
/// primary mode under the plain names, as stored before every mode was named).
std::vector<EvalPoint> without_primary_copies(const std::vector<EvalPoint>& points);

}  // namespace xmc
