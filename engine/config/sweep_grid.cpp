#include "engine/config/sweep_grid.h"

#include <nlohmann/json.hpp>
#include <set>

#include "engine/core/error.h"

namespace xmc {
namespace {

constexpr std::size_t kMaxValues = 1000;
constexpr std::size_t kMaxPoints = 10000;

}  // namespace

SweepAxis parse_sweep_axis(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--grid " + text + ": expected KEY=VALUE,VALUE,..., e.g. --grid lr=0.001,0.003");
  SweepAxis axis{text.substr(0, eq), {}};
  const std::string values = text.substr(eq + 1);
  int depth = 0;
  bool quoted = false;
  std::string current;
  auto flush = [&] {
    // "0.001, 0.003" as typed: spaces around a value are not part of it.
    const auto first = current.find_first_not_of(" \t");
    const auto last = current.find_last_not_of(" \t");
    current = first == std::string::npos ? std::string() : current.substr(first, last - first + 1);
    if (current.empty()) throw ConfigError("--grid " + text + ": an empty value (two commas in a row, or one at an end)");
    axis.values.push_back(current);
    current.clear();
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    const char c = values[i];
    if (quoted) {
      if (c == '\\' && i + 1 < values.size()) {
        current += c;
        current += values[++i];
        continue;
      }
      if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      flush();
      continue;
    }
    current += c;
  }
  flush();
  if (axis.values.size() > kMaxValues)
    throw ConfigError("--grid " + axis.key + ": " + std::to_string(axis.values.size()) + " values, at most " + std::to_string(kMaxValues));
  std::set<std::string> seen;
  for (const auto& v : axis.values)
    if (!seen.insert(v).second) throw ConfigError("--grid " + axis.key + ": the value " + v + " is given twice");
  return axis;
}

std::vector<std::vector<std::string>> sweep_points(const std::vector<SweepAxis>& axes) {
  std::set<std::string> keys;
  std::size_t count = 1;
  for (const auto& axis : axes) {
    if (!keys.insert(axis.key).second) throw ConfigError("--grid " + axis.key + ": the key is given twice (list all its values in one --grid)");
    if (axis.values.empty()) throw ConfigError("--grid " + axis.key + ": no values");
    count *= axis.values.size();
    if (count > kMaxPoints) throw ConfigError("the grid has more than " + std::to_string(kMaxPoints) + " points: fewer values, please");
  }
  std::vector<std::vector<std::string>> points{{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> next;
    next.reserve(points.size() * axis.values.size());
    for (const auto& point : points)
      for (const auto& value : axis.values) {
        next.push_back(point);
        next.back().push_back(axis.key + "=" + value);
      }
    points = std::move(next);
  }
  if (axes.empty()) return {};
  return points;
}

std::string sweep_grid_json(const std::vector<SweepAxis>& axes) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& axis : axes) j.push_back({{"key", axis.key}, {"values", axis.values}});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace xmc
