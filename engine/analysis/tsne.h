#pragma once
// Engine-internal (includes torch). Exact t-SNE (van der Maaten & Hinton 2008) of a few hundred to ~2,000
// points down to 2-D, for the "t-SNE of negatives" view (DESIGN.md sections 2 and 7).
//
// Per point, a Gaussian bandwidth is found by bisection so that its conditional distribution over the other
// points has the requested perplexity; P is the symmetrised joint distribution, Q the Student-t (one
// degree of freedom) similarities of the 2-D map, and KL(P‖Q) is minimised by gradient descent with early
// exaggeration, momentum and per-coordinate gains. Every step is a handful of torch ops on [n × n]
// tensors (no per-pair C++ loops), so n ≤ 2,000 keeps memory ≤ ~50 MB and 500 iterations cost about a
// second for n = 500. Up to 1,024 points it runs on one thread (restoring torch's thread count after):
// its ops are too small for threads to pay, and on a busy machine they cost far more than they save.
// The result is deterministic for a seed (above 1,024 points: for a seed and a thread count).
#include <torch/torch.h>

#include <cstdint>
#include <functional>

#include "engine/core/progress.h"

namespace xmc {

struct TsneOptions {
  double perplexity = 30;           ///< effective neighbours per point; clamped to (n - 1) / 3 for small n
  std::int64_t iterations = 500;    ///< gradient-descent iterations
  std::uint64_t seed = 1;           ///< seeds the initial map Y ~ N(0, 1e-4 I)
  double early_exaggeration = 12;   ///< P is multiplied by this for the first quarter of the iterations
  double learning_rate = 0;         ///< 0 = automatic: max(n / 12, 50)
  /// Told the iterations done (its task started by the caller with `iterations` units); asked whether to
  /// stop every few iterations (throws xmc::Cancelled). Null: neither.
  Progress* progress = nullptr;
  /// Given the map as it converges ([n, 2] float32 on the CPU, centred), every `layout_every` iterations and not
  /// after the last (the result is that); for a view that draws the layout as it forms. Null: never.
  std::function<void(const torch::Tensor& map, std::int64_t iteration)> on_layout;
  std::int64_t layout_every = 25;
};

/// The 2-D map of `points` ([n, d], any floating dtype, any device; n ≤ 2,000 is the intended range):
/// [n, 2] float32 on the CPU, centred at the origin. n = 0 gives [0, 2]; n = 1 the origin; n = 2 or 3
/// (too few for a perplexity) the points projected onto their first two principal axes.
/// Throws xmc::Error for a tensor that is not [n, d] or holds non-finite values.
torch::Tensor tsne_2d(const torch::Tensor& points, const TsneOptions& options = {});

}  // namespace xmc
