#include "engine/analysis/projection_2d.h"

#include <torch/torch.h>

#include "engine/analysis/tsne.h"
#include "engine/core/error.h"

namespace xmc {

std::vector<float> project_2d(const std::vector<float>& points, std::int64_t n, std::int64_t dim, const std::string& method,
                              std::uint64_t seed, Progress& progress, const std::function<void(const std::vector<float>& xy)>& on_layout) {
  if (n < 0 || dim < 1 || static_cast<std::int64_t>(points.size()) != n * dim)
    throw ConfigError("projection: " + std::to_string(points.size()) + " values are not " + std::to_string(n) + " points of " +
                      std::to_string(dim) + " dimensions");
  if (n == 0) return {};
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::from_blob(const_cast<float*>(points.data()), {n, dim}, torch::kFloat32).to(torch::kFloat64);
  torch::Tensor xy;
  if (method == "pca") {
    progress.start("PCA of the points", 1);
    const torch::Tensor centred = x - x.mean(0, true);
    const torch::Tensor covariance = centred.t().mm(centred) / static_cast<double>(std::max<std::int64_t>(1, n - 1));
    const auto [values, vectors] = torch::linalg_eigh(covariance, "L");  // eigenvalues ascending
    const std::int64_t k = std::min<std::int64_t>(2, dim);
    const torch::Tensor top = vectors.narrow(1, dim - k, k).flip({1});  // largest first
    xy = centred.mm(top);
    if (k < 2) xy = torch::cat({xy, torch::zeros({n, 1}, xy.options())}, 1);
  } else if (method == "tsne") {
    TsneOptions options;
    progress.start("t-SNE of the points", options.iterations);
    if (n < 4) {
      xy = torch::zeros({n, 2}, torch::kFloat64);  // nothing to arrange
    } else {
      options.seed = seed;
      options.perplexity = std::min(30.0, static_cast<double>(n - 1) / 3.0);
      options.progress = &progress;  // iterations as they go; a cancel stops between them
      if (on_layout)
        options.on_layout = [&on_layout](const torch::Tensor& map, std::int64_t) {
          const torch::Tensor flat = map.to(torch::kFloat32).contiguous();
          on_layout({flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel()});
        };
      xy = tsne_2d(x.to(torch::kFloat32), options).to(torch::kFloat64);
    }
    progress.update(options.iterations);
  } else {
    throw ConfigError("projection method: got \"" + method + "\", expected pca or tsne");
  }
  if (method == "pca") progress.update(1);
  progress.finish();
  const torch::Tensor out = xy.to(torch::kFloat32).contiguous();
  return {out.data_ptr<float>(), out.data_ptr<float>() + out.numel()};
}

}  // namespace xmc
