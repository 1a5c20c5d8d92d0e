#pragma once
// A sweep's grid: config keys, each with a list of values, and its points (every combination). Torch-free;
// the CLI reads axes as "lr=0.001,0.003" and the GUI from its grid editor.
#include <string>
#include <vector>

namespace xmc {

struct SweepAxis {
  std::string key;                  ///< a config key, "lr", "encoder.dim"
  std::vector<std::string> values;  ///< as written after "key=" (JSON or plain text, as --set takes them)
};

/// Parses "key=v1,v2,...": values are split at commas outside brackets, braces and quotes, so a list
/// value stays whole ("eval.k=[1,3],[1,5]"), and trimmed of spaces ("lr=0.001, 0.003"). Throws ConfigError naming the text when there is no key,
/// no value, an empty value, a repeated value, or more than 1000 values.
SweepAxis parse_sweep_axis(const std::string& text);

/// Every combination of the axes' values as --set assignments ("lr=0.001"), the last axis varying
/// fastest. Throws ConfigError when a key is given twice or the grid has more than 10000 points.
std::vector<std::vector<std::string>> sweep_points(const std::vector<SweepAxis>& axes);

/// The axes as JSON text: [{"key": "lr", "values": ["0.001", "0.003"]}].
std::string sweep_grid_json(const std::vector<SweepAxis>& axes);

}  // namespace xmc
