#include "engine/session/image_bank_maker.h"

#include <chrono>
#include <fstream>
#include <thread>

#include "engine/core/blas_threads.h"
#include "engine/core/error.h"
#include "engine/data/image_bank.h"
#include "engine/data/image_file_list.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/hf_weights.h"
#include "engine/model/vision/image_preprocessing.h"
#include "engine/model/vision/vision_encoder.h"

namespace xmc {
namespace {

std::filesystem::path counts_path(const std::filesystem::path& out) {
  return out.parent_path() / (out.stem().string() + "_count.npy");
}

}  // namespace

ImageEmbedSummary embed_image_list(const ImageEmbedOptions& options, Progress& progress) {
  if (options.max_images < 1 || options.max_images > 64) throw ConfigError("--max-images: got " + std::to_string(options.max_images) + ", expected 1 to 64");
  if (options.batch_size < 1 || options.batch_size > 4096) throw ConfigError("--batch-size: got " + std::to_string(options.batch_size) + ", expected 1 to 4096");
  if (options.out.extension() != ".npy") throw ConfigError("--out: " + options.out.string() + " should end in .npy (NumPy's format is written)");
  const auto started = std::chrono::steady_clock::now();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = options.threads > 0 ? static_cast<int>(options.threads) : cores;
  // A vision transformer is large matrix products: the BLAS's threads run them, LibTorch's pool stays on one
  // (engine/model/cpu_thread_policy.h); decoding and resizing run on threads of their own.
  at::set_num_threads(1);
  set_blas_threads(threads);
  const torch::Device device = parse_device(options.device);

  const VisionConfig config = read_vision_config(options.model / "config.json");
  const bool trained = HfWeights::present(options.model);
  const VisionEncoder encoder = trained ? VisionEncoder::load(options.model, device) : VisionEncoder(config, device);
  const ImagePreprocessing defaults{.height = config.image_size, .width = config.image_size, .resample = config.family == VisionFamily::vit ? 2 : 3};
  const ImagePreprocessing preprocessing = read_image_preprocessing(options.model / "preprocessor_config.json", defaults);
  if (!preprocessing.do_resize || preprocessing.height != config.image_size || preprocessing.width != config.image_size)
    throw InputError((options.model / "preprocessor_config.json").string(),
                     "resizes to " + std::to_string(preprocessing.height) + " x " + std::to_string(preprocessing.width) + ", but config.json's image_size is " +
                         std::to_string(config.image_size));

  const auto items = read_image_file_list(options.list, options.max_images);
  ImageEmbedSummary summary;
  summary.items = static_cast<std::int64_t>(items.size());
  summary.dim = config.hidden_size;
  summary.model = config.family_name() + ", " + std::to_string(config.num_layers) + " layers, hidden " + std::to_string(config.hidden_size) + ", " +
                  std::to_string(config.image_size) + " px" + (trained ? "" : " (random weights: config.json alone)");
  // Every image, in order, with its item and slot.
  struct Job {
    std::int64_t item, slot;
    const std::filesystem::path* path;
  };
  std::vector<Job> jobs;
  std::vector<std::int32_t> counts(items.size(), 0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    counts[i] = static_cast<std::int32_t>(items[i].size());
    summary.slots = std::max<std::int64_t>(summary.slots, counts[i]);
    summary.items_with_images += counts[i] > 0;
    for (std::size_t s = 0; s < items[i].size(); ++s) jobs.push_back({static_cast<std::int64_t>(i), static_cast<std::int64_t>(s), &items[i][s]});
  }
  summary.images = static_cast<std::int64_t>(jobs.size());
  summary.slots = std::max<std::int64_t>(summary.slots, 1);
  const std::int64_t m = config.hidden_size, M = summary.slots, side = config.image_size;
  std::vector<float> bank(static_cast<std::size_t>(summary.items * M * m), 0.0f);

  progress.start("embedding images", summary.images);
  const std::int64_t pixels_per_image = 3 * side * side;
  for (std::size_t begin = 0; begin < jobs.size(); begin += static_cast<std::size_t>(options.batch_size)) {
    const std::size_t end = std::min(jobs.size(), begin + static_cast<std::size_t>(options.batch_size));
    torch::Tensor pixels = torch::empty({static_cast<std::int64_t>(end - begin), 3, side, side}, torch::kFloat);
    float* data = pixels.data_ptr<float>();
    std::vector<std::string> errors(end - begin);
    // Decoding and resizing are the host's share: images dealt round-robin to `threads` workers.
    const auto count = static_cast<std::int64_t>(end - begin);
    auto work = [&](std::int64_t first) {
      for (std::int64_t k = first; k < count; k += threads) {
        const Job& job = jobs[begin + static_cast<std::size_t>(k)];
        try {
          const std::vector<float> image = preprocess_image(read_image_file(*job.path), preprocessing);
          std::copy(image.begin(), image.end(), data + k * pixels_per_image);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(k)] = e.what();
        }
      }
    };
    std::vector<std::thread> workers;
    for (int t = 1; t < std::min<std::int64_t>(threads, count); ++t) workers.emplace_back(work, t);
    work(0);
    for (auto& worker : workers) worker.join();
    for (std::size_t k = 0; k < errors.size(); ++k)
      if (!errors[k].empty())
        throw InputError(options.list.string(), static_cast<std::size_t>(jobs[begin + k].item) + 1, "image " + std::to_string(jobs[begin + k].slot + 1) + ": " + errors[k]);
    const torch::Tensor vectors = encoder.embed(pixels).to(torch::kCPU).contiguous();
    const float* out = vectors.data_ptr<float>();
    for (std::size_t k = 0; k < end - begin; ++k) {
      const Job& job = jobs[begin + k];
      std::copy(out + k * static_cast<std::size_t>(m), out + (k + 1) * static_cast<std::size_t>(m),
                bank.begin() + static_cast<std::ptrdiff_t>((job.item * M + job.slot) * m));
    }
    if (progress.cancelled()) throw Cancelled();
    progress.update(static_cast<std::int64_t>(end));
  }
  progress.finish();
  summary.counts = counts_path(options.out);
  ImageBank::from_values(summary.items, M, m, std::move(bank), std::move(counts)).save(options.out, summary.counts);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return summary;
}

}  // namespace xmc
