#include "engine/analysis/tsne.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace xmc {
namespace {

/// Squared Euclidean distances between the rows of x ([n, d] double, centred): [n, n], diagonal 0.
torch::Tensor squared_distances(const torch::Tensor& x) {
  const torch::Tensor norms = (x * x).sum(1);
  torch::Tensor d = torch::mm(x, x.t()).mul_(-2.0).add_(norms.unsqueeze(1)).add_(norms.unsqueeze(0)).clamp_min_(0.0);
  d.fill_diagonal_(0.0);
  return d;
}

/// Row i: p_{j|i} ∝ exp(-β_i d_ij) over j ≠ i, with β_i found by bisection so that the row's entropy is
/// log(perplexity). All rows are searched at once. `d` is [n, n] double with a zero diagonal.
torch::Tensor conditional_probabilities(const torch::Tensor& d, double perplexity) {
  const std::int64_t n = d.size(0);
  const double target = std::log(perplexity);
  const auto options = d.options();
  const torch::Tensor off_diagonal = torch::ones({n, n}, options).fill_diagonal_(0.0);
  // Shifting a row by its smallest distance changes neither p nor the entropy, and keeps exp() from
  // underflowing to an all-zero row.
  const torch::Tensor nearest = std::get<0>((d + torch::eye(n, options) * std::numeric_limits<double>::max()).min(1, /*keepdim=*/true));
  const torch::Tensor shifted = (d - nearest).mul_(off_diagonal).clamp_min_(0.0);
  const torch::Tensor mean_distance = shifted.sum(1, true) / static_cast<double>(n - 1);
  torch::Tensor beta = 1.0 / mean_distance.clamp_min(1e-12);
  torch::Tensor lo = torch::zeros({n, 1}, options);
  torch::Tensor hi = torch::full({n, 1}, std::numeric_limits<double>::infinity(), options);
  torch::Tensor p;
  for (int iteration = 0; iteration < 200; ++iteration) {
    p = torch::exp(-shifted * beta).mul_(off_diagonal);
    const torch::Tensor sum = p.sum(1, true).clamp_min(1e-300);
    const torch::Tensor entropy = torch::log(sum) + beta * (shifted * p).sum(1, true) / sum;
    const torch::Tensor gap = entropy - target;
    if (gap.abs().max().item<double>() < 1e-5) break;
    const torch::Tensor too_flat = gap > 0;  // entropy too high: sharpen (larger β)
    lo = torch::where(too_flat, beta, lo);
    hi = torch::where(too_flat, hi, beta);
    beta = torch::where(torch::isinf(hi), beta * 2.0, (lo + hi) * 0.5);
  }
  p = torch::exp(-shifted * beta).mul_(off_diagonal);
  return p / p.sum(1, true).clamp_min(1e-300);
}

/// Y ~ N(0, 1e-4) from a portable generator (the same map for a seed on every platform and LibTorch).
torch::Tensor initial_map(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };  // (0, 1)
  std::vector<float> values(static_cast<std::size_t>(n * 2));
  for (std::size_t i = 0; i < values.size(); i += 2) {
    // Box-Muller: two independent standard normals from two uniforms.
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double angle = 2.0 * std::numbers::pi * uniform();
    values[i] = static_cast<float>(1e-2 * r * std::cos(angle));
    values[i + 1] = static_cast<float>(1e-2 * r * std::sin(angle));
  }
  return torch::from_blob(values.data(), {n, 2}, torch::kFloat32).clone();
}

/// Too few points for a perplexity: the exact 2-D configuration (classical MDS of the centred points).
torch::Tensor principal_map(const torch::Tensor& x) {
  const std::int64_t n = x.size(0);
  const torch::Tensor gram = torch::mm(x, x.t());
  auto [values, vectors] = torch::linalg_eigh(gram);  // ascending eigenvalues
  torch::Tensor y = torch::zeros({n, 2}, x.options());
  for (std::int64_t k = 0; k < std::min<std::int64_t>(2, n); ++k) {
    const std::int64_t column = n - 1 - k;
    y.select(1, k).copy_(vectors.select(1, column) * std::sqrt(std::max(0.0, values[column].item<double>())));
  }
  return y;
}

/// Up to this many points the [n × n] steps run on one thread: each torch op is a parallel region, and
/// for ~10^5-10^6 elements the regions' barriers cost more than the threads save — on a busy 2-core
/// machine 500 iterations for 455 points took 35 s on two threads and 0.8 s on one.
constexpr std::int64_t kSingleThreadedPoints = 1024;

/// Sets torch's intra-op thread count for a scope and restores it afterwards.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int threads) : saved_(at::get_num_threads()) {
    if (threads != saved_) at::set_num_threads(threads);
  }
  ~ThreadCountScope() {
    if (at::get_num_threads() != saved_) at::set_num_threads(saved_);
  }
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;

 private:
  int saved_;
};

}  // namespace

torch::Tensor tsne_2d(const torch::Tensor& points, const TsneOptions& options) {
  if (!points.defined() || points.dim() != 2)
    throw Error("t-SNE: expected an [n, d] tensor of points, got " + (points.defined() ? std::to_string(points.dim()) + " dimensions" : std::string("none")));
  if (!points.is_floating_point()) throw Error("t-SNE: the points must be floating point");
  if (options.iterations < 0) throw Error("t-SNE: iterations must be >= 0, got " + std::to_string(options.iterations));
  torch::NoGradGuard no_grad;
  const std::int64_t n = points.size(0);
  if (n == 0) return torch::zeros({0, 2}, torch::kFloat32);
  torch::Tensor x = points.detach().to(torch::kCPU, torch::kFloat64);
  if (!torch::isfinite(x).all().item<bool>()) throw Error("t-SNE: the points hold NaN or infinite values");
  x = x - x.mean(0, /*keepdim=*/true);
  if (n <= 3) return principal_map(x).to(torch::kFloat32).contiguous();
  const ThreadCountScope threads(n <= kSingleThreadedPoints ? 1 : at::get_num_threads());

  // Joint probabilities P (symmetrised conditionals, summing to 1).
  const double perplexity = std::clamp(options.perplexity, 1.0, std::max(1.0, static_cast<double>(n - 1) / 3.0));
  torch::Tensor p = conditional_probabilities(squared_distances(x), perplexity);
  p = ((p + p.t()) / (2.0 * static_cast<double>(n))).clamp_min_(1e-12).to(torch::kFloat32);
  p.fill_diagonal_(0.0f);
  const torch::Tensor p_exaggerated = p * options.early_exaggeration;

  // Gradient descent on KL(P || Q) with momentum and per-coordinate gains (van der Maaten 2008; the
  // schedule and automatic learning rate of Belkina et al. 2019 and scikit-learn).
  const std::int64_t exaggerated_iterations = options.iterations / 4;
  const double learning_rate = options.learning_rate > 0 ? options.learning_rate : std::max(static_cast<double>(n) / 12.0, 50.0);
  torch::Tensor y = initial_map(n, options.seed);
  torch::Tensor update = torch::zeros_like(y);
  torch::Tensor gains = torch::ones_like(y);
  constexpr std::int64_t kReportEvery = 10;  // iterations between progress reports and cancellation checks
  for (std::int64_t iteration = 0; iteration < options.iterations; ++iteration) {
    if (options.progress != nullptr && iteration % kReportEvery == 0) {
      if (options.progress->cancelled()) throw Cancelled();
      options.progress->update(iteration);
    }
    const bool early = iteration < exaggerated_iterations;
    const torch::Tensor& target = early ? p_exaggerated : p;
    const double momentum = early ? 0.5 : 0.8;
    // Student-t kernel num_ij = 1 / (1 + |y_i - y_j|^2), Q = num / Σ num.
    const torch::Tensor norms = (y * y).sum(1);
    torch::Tensor num = torch::mm(y, y.t()).mul_(-2.0f).add_(norms.unsqueeze(1)).add_(norms.unsqueeze(0)).clamp_min_(0.0f).add_(1.0f).reciprocal_();
    num.fill_diagonal_(0.0f);
    // dC/dy_i = 4 Σ_j (p_ij - q_ij) num_ij (y_i - y_j) = 4 (diag(W 1) - W) y with W = (P - Q) ∘ num.
    const torch::Tensor weights = (target - num / num.sum()).mul_(num);
    const torch::Tensor gradient = (weights.sum(1, true) * y - torch::mm(weights, y)).mul_(4.0f);
    const torch::Tensor same_sign = (update * gradient) >= 0;
    gains = torch::where(same_sign, gains * 0.8f, gains + 0.2f).clamp_min_(0.01f);
    update = update * momentum - gains * gradient * learning_rate;
    y = y + update;
    y = y - y.mean(0, true);
    if (options.on_layout && options.layout_every > 0 && (iteration + 1) % options.layout_every == 0 && iteration + 1 < options.iterations)
      options.on_layout(y, iteration + 1);
  }
  return y.contiguous();
}

}  // namespace xmc
