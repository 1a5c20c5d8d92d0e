#include "engine/records/evaluation_modes.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "engine/eval/metric_key.h"

namespace xmc {
namespace {

struct SplitKey {
  std::string mode;
  std::string metric;  // without the mode
};

SplitKey split(const std::string& name) {
  MetricKey key = MetricKey::parse(name);
  SplitKey out{key.mode, {}};
  key.mode.clear();
  out.metric = key.str();
  return out;
}

/// For each evaluation (step), the mode whose points repeat every unprefixed point of that step: the
/// primary mode then. Absent for steps without unprefixed points or with no such mode (older runs).
std::map<std::int64_t, std::string> primary_mode_by_step(const std::vector<EvalPoint>& points) {
  std::map<std::int64_t, std::map<std::string, double>> plain;                       // step -> metric -> value
  std::map<std::int64_t, std::map<std::string, std::map<std::string, double>>> moded;  // step -> mode -> metric -> value
  for (const EvalPoint& p : points) {
    const SplitKey k = split(p.metric);
    if (k.mode.empty())
      plain[p.step][k.metric] = p.value;
    else
      moded[p.step][k.mode][k.metric] = p.value;
  }
  std::map<std::int64_t, std::string> out;
  for (const auto& [step, metrics] : plain) {
    const auto modes = moded.find(step);
    if (modes == moded.end()) continue;
    for (const auto& mode_values : modes->second) {
      const auto& values = mode_values.second;  // a named reference: lambdas may not capture structured bindings (clang < 16)
      const bool repeats_all = std::all_of(metrics.begin(), metrics.end(), [&values](const auto& entry) {
        const auto it = values.find(entry.first);
        return it != values.end() && (it->second == entry.second || (it->second != it->second && entry.second != entry.second));
      });
      if (repeats_all) {
        out[step] = mode_values.first;
        break;
      }
    }
  }
  return out;
}

/// The primary mode at the last evaluation of `points`, from their per-step primaries.
std::string primary_at_last_step(const std::vector<EvalPoint>& points, const std::map<std::int64_t, std::string>& primary) {
  if (points.empty()) return {};
  std::int64_t last = points.front().step;
  for (const EvalPoint& p : points) last = std::max(last, p.step);
  const auto it = primary.find(last);
  return it == primary.end() ? std::string() : it->second;
}

}  // namespace

std::string final_primary_mode(const std::vector<EvalPoint>& points) { return primary_at_last_step(points, primary_mode_by_step(points)); }

std::vector<ModeSeries> series_by_mode(const std::vector<EvalPoint>& points) {
  const auto primary = primary_mode_by_step(points);
  std::vector<ModeSeries> out;
  auto series = [&out](const std::string& mode) -> ModeSeries& {
    auto it = std::find_if(out.begin(), out.end(), [&](const ModeSeries& s) { return s.mode == mode; });
    if (it == out.end()) it = out.insert(out.end(), ModeSeries{mode, {}});
    return *it;
  };
  for (EvalPoint p : points) {
    const SplitKey k = split(p.metric);
    if (k.mode.empty() && primary.count(p.step)) continue;  // shown in its mode's series
    p.metric = k.metric;
    series(k.mode).points.push_back(std::move(p));
  }
  for (ModeSeries& s : out)
    s.primary_at_some_evaluation = std::any_of(primary.begin(), primary.end(), [&s](const auto& entry) { return entry.second == s.mode; });
  // The primary mode of the last evaluation leads (unprefixed points of old runs are that mode).
  const std::string lead_mode = primary_at_last_step(points, primary);
  auto lead = std::find_if(out.begin(), out.end(), [&](const ModeSeries& s) { return s.mode == lead_mode; });
  if (lead != out.end()) std::rotate(out.begin(), lead, lead + 1);
  return out;
}

double final_value(const std::vector<EvalPoint>& points, const std::string& metric) {
  double value = std::numeric_limits<double>::quiet_NaN();
  for (const EvalPoint& p : points)  // stored by step: the last one is the final one
    if (p.metric == metric) value = p.value;
  return value;
}

std::vector<EvalPoint> without_primary_copies(const std::vector<EvalPoint>& points) {
  const auto primary = primary_mode_by_step(points);
  std::vector<EvalPoint> out;
  out.reserve(points.size());
  for (const EvalPoint& p : points) {
    const auto it = primary.find(p.step);
    if (it != primary.end() && MetricKey::parse(p.metric).mode == it->second) continue;
    out.push_back(p);
  }
  return out;
}

}  // namespace xmc
