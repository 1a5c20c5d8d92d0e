#include "engine/sampler/balanced_clustering.h"

#include <algorithm>
#include <limits>
#include <random>
#include <string>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"

namespace xmc {
namespace {

// Floats per torch op on the CPU: a group of nodes (or a slice of one big node) of this many values and
// its product temporaries stay in the per-core L2 cache across the iterations of a split.
constexpr std::int64_t kCpuTileFloats = std::int64_t{1} << 19;
constexpr std::int64_t kDeviceTileFloats = std::int64_t{1} << 28;

// The rows of a group of G nodes, [G, S, d] as floats with zero rows for padding, read a tile-sized slice of dim 1
// at a time. A group whose float copy fits `copy_bytes` is gathered once; a bigger one (the first levels of a large
// set: a few nodes of a million rows) is gathered slice by slice at every pass instead, so that no level holds a
// second copy of the embeddings (2.3 GB at 2.25M queries x 256 in floats).
class NodeRows {
 public:
  NodeRows(const torch::Tensor& points, const torch::Tensor& members, std::int64_t n, std::int64_t tile, std::int64_t copy_bytes,
           bool rows_in_order)
      : points_(points), members_(members), n_(n), rows_in_order_(rows_in_order) {
    const std::int64_t g = members.size(0);
    const std::int64_t s = members.size(1);
    const std::int64_t d = points.size(1);
    width_ = std::max<std::int64_t>(1, tile / std::max<std::int64_t>(1, g * d));
    const bool in_place = rows_in_order && points.scalar_type() == torch::kFloat;
    if (!in_place && g * s * d * static_cast<std::int64_t>(sizeof(float)) <= copy_bytes) whole_ = gather(0, s);
  }

  std::int64_t groups() const { return members_.size(0); }
  std::int64_t size() const { return members_.size(1); }
  std::int64_t slices() const { return (size() + width_ - 1) / width_; }
  std::int64_t first_of(std::int64_t slice) const { return slice * width_; }
  std::int64_t width_of(std::int64_t slice) const { return std::min(width_, size() - first_of(slice)); }
  /// The rows of slice `slice`: [G, width_of(slice), d].
  torch::Tensor rows(std::int64_t slice) const {
    return whole_.defined() ? whole_.narrow(1, first_of(slice), width_of(slice)) : gather(first_of(slice), width_of(slice));
  }

 private:
  torch::Tensor gather(std::int64_t first, std::int64_t width) const {
    const std::int64_t g = members_.size(0);
    const std::int64_t d = points_.size(1);
    if (rows_in_order_) return points_.narrow(0, first, width).to(torch::kFloat).view({1, width, d});
    const auto ids = members_.narrow(1, first, width);
    auto x = points_.index_select(0, ids.clamp_max(n_ - 1).reshape({-1})).to(torch::kFloat).view({g, width, d});
    return x.masked_fill_((ids >= n_).unsqueeze(2), 0.0);
  }

  const torch::Tensor& points_;
  const torch::Tensor& members_;
  std::int64_t n_;
  bool rows_in_order_;
  std::int64_t width_ = 1;
  torch::Tensor whole_;
};

// Runs f(slice) for every slice: in parallel over the slices when the node is read in slices and this is not
// already a parallel region (a level of one or two huge nodes), in order otherwise.
template <typename F>
void for_each_slice(const NodeRows& x, F&& f) {
  if (x.slices() > 1 && !at::in_parallel_region()) {
    at::parallel_for(0, x.slices(), 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t k = begin; k < end; ++k) f(k);
    });
  } else {
    for (std::int64_t k = 0; k < x.slices(); ++k) f(k);
  }
}

// out[g, s] = <x[g, s, :], v[g, :]>.
torch::Tensor rowwise_dot(const NodeRows& x, const torch::Tensor& v) {
  auto out = torch::empty({x.groups(), x.size()}, v.options());
  const auto vb = v.unsqueeze(1);
  for_each_slice(x, [&](std::int64_t k) {
    auto part = out.narrow(1, x.first_of(k), x.width_of(k));
    at::sum_out(part, x.rows(k) * vb, {2});
  });
  return out;
}

// out[g, :] = Σ_s mask[g, s] · x[g, s, :] (mask as 0/1 floats; undefined: every row). Each slice sums into its
// own row of partial sums, so the result does not depend on which thread took which slice.
torch::Tensor masked_row_sum(const NodeRows& x, const torch::Tensor& mask, std::int64_t d, const torch::TensorOptions& options) {
  auto partial = torch::zeros({x.slices(), x.groups(), d}, options);
  for_each_slice(x, [&](std::int64_t k) {
    const auto rows = x.rows(k);
    auto out = partial.select(0, k);
    if (mask.defined()) {
      at::sum_out(out, rows * mask.narrow(1, x.first_of(k), x.width_of(k)).unsqueeze(2), {1});
    } else {
      at::sum_out(out, rows, {1});
    }
  });
  return partial.sum(0);
}

torch::Tensor normalized(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1).eps(1e-12));
}

// Splits a group of G nodes held as member rows [G, S] (row ids ascending, then padding id n). Returns,
// per node, the ascending positions (into its member row) of the h = ⌊S/2⌋ rows that go to c1.
// `rows_in_order`: one node whose members are rows 0 … S-1 in order (the first level), read in place.
torch::Tensor split_group(const torch::Tensor& points, const torch::Tensor& members, const torch::Tensor& starts, std::int64_t n,
                          std::int64_t iterations, std::int64_t tile, std::int64_t copy_bytes, bool rows_in_order) {
  const std::int64_t g = members.size(0);
  const std::int64_t s = members.size(1);
  const std::int64_t d = points.size(1);
  const std::int64_t h = s / 2;
  const auto floats = torch::TensorOptions().dtype(torch::kFloat).device(points.device());
  const NodeRows x(points, members, n, tile, copy_bytes, rows_in_order);
  const auto padding = members >= n;
  const auto total = masked_row_sum(x, {}, d, floats);
  const auto start_rows = points.index_select(0, members.gather(1, starts).reshape({-1})).to(torch::kFloat).view({g, 2, d});
  auto direction = start_rows.select(1, 1) - start_rows.select(1, 0);

  torch::Tensor side1;
  torch::Tensor previous;
  for (std::int64_t it = 0; it < iterations; ++it) {
    auto diff = rowwise_dot(x, direction);
    diff.masked_fill_(padding, -std::numeric_limits<float>::infinity());
    // Stable: equal differences keep position order, i.e. the lower row id goes to c1 first.
    side1 = std::get<1>(diff.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true)).narrow(1, 0, h);
    const auto mask = torch::zeros({g, s}, floats).scatter_(1, side1, 1.0);
    if (previous.defined() && torch::equal(mask, previous)) break;  // fixed point: nothing moves any more
    previous = mask;
    if (it + 1 == iterations) break;
    const auto sum1 = masked_row_sum(x, mask, d, floats);
    direction = normalized(sum1) - normalized(total - sum1);
  }
  return std::get<0>(side1.sort(1));
}

}  // namespace

std::vector<std::vector<std::int64_t>> balanced_clusters(const torch::Tensor& embeddings, std::int64_t cluster_size,
                                                         const BalancedClusteringOptions& options) {
  if (embeddings.dim() != 2 || !embeddings.is_floating_point())
    throw ConfigError("balanced_clusters: embeddings must be a 2-D floating tensor");
  if (cluster_size < 1) throw ConfigError("balanced_clusters: cluster_size must be >= 1, got " + std::to_string(cluster_size));
  if (options.iterations < 1) throw ConfigError("balanced_clusters: iterations must be >= 1");
  torch::NoGradGuard no_grad;
  const std::int64_t n = embeddings.size(0);
  const std::int64_t d = embeddings.size(1);
  std::vector<std::vector<std::int64_t>> clusters;
  if (n == 0) return clusters;
  if (cluster_size == 1) {
    for (std::int64_t i = 0; i < n; ++i) clusters.push_back({i});
    return clusters;
  }

  std::int64_t levels = 0;
  for (std::int64_t largest = n; largest > cluster_size; largest = (largest + 1) / 2) ++levels;
  Progress& progress = options.progress ? *options.progress : silent_progress();
  progress.start("balanced clustering", levels);

  const auto device = embeddings.device();
  const std::int64_t tile = options.tile_floats > 0 ? options.tile_floats : device.is_cpu() ? kCpuTileFloats : kDeviceTileFloats;
  // Read in place (any floating dtype, converted a slice at a time); member id n is padding, read as zeros.
  const auto points = embeddings.contiguous();
  // The groups split at once (one a thread on the CPU) share the memory budget's part for their float copies.
  // The budget is host memory: on another device the copies live beside the embeddings already there, so
  // there they may also reach the embeddings' own size as floats (re-gathering a node of millions of rows
  // at every pass cost a GPU 1.7x the clustering time).
  const std::int64_t float_copy_of_all = n * d * static_cast<std::int64_t>(sizeof(float));
  const std::int64_t copy_bytes = options.copy_bytes > 0 ? options.copy_bytes
                                  : device.is_cpu()
                                      ? memory_budget_part(memory_share::kClusteringNodes) / std::max(1, at::get_num_threads())
                                      : std::max(memory_budget_part(memory_share::kClusteringNodes), float_copy_of_all);
  const auto ids = torch::TensorOptions().dtype(torch::kInt64).device(device);
  auto members = torch::arange(n, ids).view({1, n});  // one node per row: ascending row ids, then padding
  std::mt19937_64 rng(options.seed);

  for (std::int64_t level = 0; level < levels; ++level) {
    if (progress.cancelled()) throw Cancelled();
    const std::int64_t nodes = members.size(0);
    const std::int64_t s = members.size(1);
    const std::int64_t h = s / 2;
    // Two distinct random rows per node (node sizes are s or s - 1, both ≥ 2 here).
    const auto sizes_tensor = (members < n).sum(1).to(torch::kCPU);
    const auto* sizes = sizes_tensor.data_ptr<std::int64_t>();
    auto starts_cpu = torch::empty({nodes, 2}, torch::kInt64);
    auto* starts_ptr = starts_cpu.data_ptr<std::int64_t>();
    for (std::int64_t k = 0; k < nodes; ++k) {
      const auto size = static_cast<std::uint64_t>(sizes[k]);
      const auto first = rng() % size;
      auto second = rng() % (size - 1);
      if (second >= first) ++second;
      starts_ptr[2 * k] = static_cast<std::int64_t>(first);
      starts_ptr[2 * k + 1] = static_cast<std::int64_t>(second);
    }
    const auto starts = starts_cpu.to(device);

    const std::int64_t width = s - h;  // children's padded width: ⌈s/2⌉
    auto children = torch::full({nodes, 2, width}, n, ids);
    const std::int64_t group = std::max<std::int64_t>(1, tile / (s * d));
    const std::int64_t groups = (nodes + group - 1) / group;
    auto split_groups = [&](std::int64_t first_group, std::int64_t end_group) {
      for (std::int64_t gi = first_group; gi < end_group; ++gi) {
        const std::int64_t g0 = gi * group;
        const std::int64_t g = std::min(group, nodes - g0);
        const auto node_members = members.narrow(0, g0, g);
        const auto side1 =
            split_group(points, node_members, starts.narrow(0, g0, g), n, options.iterations, tile, copy_bytes, /*rows_in_order=*/level == 0);
        auto keep0 = torch::ones({g, s}, ids.dtype(torch::kBool));
        keep0.scatter_(1, side1, false);
        auto out = children.narrow(0, g0, g);
        out.select(1, 0).copy_(node_members.masked_select(keep0).view({g, width}));
        out.select(1, 1).narrow(1, 0, h).copy_(node_members.gather(1, side1));
      }
    };
    // On the CPU, threads take whole groups and run their small ops single-threaded (one parallel region
    // per level rather than one per op); a level of one group runs its ops multi-threaded instead.
    if (device.is_cpu()) {
      at::parallel_for(0, groups, 1, split_groups);
    } else {
      split_groups(0, groups);
    }
    members = children.view({2 * nodes, width});
    progress.update(level + 1);
  }
  progress.finish();

  const auto flat = members.to(torch::kCPU).contiguous();
  const auto* row = flat.data_ptr<std::int64_t>();
  const std::int64_t width = flat.size(1);
  clusters.resize(static_cast<std::size_t>(flat.size(0)));
  for (auto& cluster : clusters) {
    for (std::int64_t j = 0; j < width && row[j] < n; ++j) cluster.push_back(row[j]);
    row += width;
  }
  return clusters;
}

}  // namespace xmc
