#include "engine/method/held_out_queries.h"

#include <algorithm>
#include <cmath>

#include "engine/config/option_group_builder.h"
#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/core/portable_random.h"

namespace xmc {

OptionGroup held_out_option_group() {
  return OptionGroupBuilder<HeldOutOptions>("held-out queries")
      .number("holdout.share", &HeldOutOptions::share, 0, 0.5,
              "Share of the training queries (with labels) held out of training, drawn from the seed: an xrlinear run fused with this "
              "one (xrlinear.dense_run) chooses the fusion weight on them, rows neither run trained on (0 = none held out)")
      .check_resume([](const TrainConfig& before, const TrainConfig& after) {
        // The held-out queries are drawn from the seed: changing either would train on queries held out so far.
        const double held_out = before.get<HeldOutOptions>().share;
        if (after.get<HeldOutOptions>().share != held_out || (held_out > 0 && after.seed != before.seed))
          throw ConfigError("resume: holdout.share (and, with it, seed, which draws the held-out queries) cannot change when resuming a run");
      })
      .build();
}

std::vector<std::int64_t> draw_held_out_rows(std::span<const std::int64_t> labelled_rows, double share, std::uint64_t seed, std::uint64_t stream) {
  std::vector<std::int64_t> candidates(labelled_rows.begin(), labelled_rows.end());
  const auto n = static_cast<std::int64_t>(candidates.size());
  if (!(share > 0) || n < 2) return {};
  const auto count = std::clamp<std::int64_t>(std::llround(share * static_cast<double>(n)), 1, n - 1);
  std::mt19937_64 rng(seed ^ stream);
  for (std::int64_t i = 0; i < count; ++i) std::swap(candidates[static_cast<std::size_t>(i)], candidates[static_cast<std::size_t>(i + uniform_index(rng, n - i))]);
  std::vector<std::int64_t> out(candidates.begin(), candidates.begin() + count);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace xmc
