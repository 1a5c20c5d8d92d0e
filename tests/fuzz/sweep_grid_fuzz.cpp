// Sweep grids: each input line is one --grid axis ("lr=0.001,0.003"); the axes' points are then built and
// each point applied to a config, as xmc sweep and the workbench's sweep dialog do.
#include "engine/config/sweep_grid.h"
#include "engine/config/train_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] {
    std::vector<xmc::SweepAxis> axes;
    std::size_t start = 0;
    while (start <= text.size() && axes.size() < 8) {
      const auto end = std::min(text.find('\n', start), text.size());
      axes.push_back(xmc::parse_sweep_axis(text.substr(start, end - start)));
      start = end + 1;
    }
    const auto points = xmc::sweep_points(axes);
    (void)xmc::sweep_grid_json(axes);
    for (std::size_t p = 0; p < points.size() && p < 16; ++p) {
      xmc::TrainConfig config;
      xmc::apply_config_overrides(config, points[p]);
    }
  });
  return 0;
}
