#pragma once
// Points of any dimension in 2-D for the embedding projector: PCA (the two directions of largest variance)
// or t-SNE. Plain C++ (flat float vectors) so the session can call it without torch in its header.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/progress.h"

namespace xmc {

/// `points` is [n x dim] row-major; returns [n x 2] row-major. method: "pca" (centred, projected on the
/// top two eigenvectors of the covariance, the first coordinate the one of larger variance) or "tsne"
/// (perplexity min(30, (n - 1) / 3), seeded). Throws ConfigError for another method or a size mismatch.
/// `on_layout`, when given, gets t-SNE's map as it converges ([n x 2] row-major, every 25 of its iterations).
std::vector<float> project_2d(const std::vector<float>& points, std::int64_t n, std::int64_t dim, const std::string& method,
                              std::uint64_t seed, Progress& progress = silent_progress(),
                              const std::function<void(const std::vector<float>& xy)>& on_layout = {});

}  // namespace xmc
