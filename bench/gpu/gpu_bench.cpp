// The GPU benchmarks of the CUDA path, one JSON line per measurement. Every one also runs on the CPU at a
// small size (--device cpu), which is how they are checked on machines without a GPU.
//   gpu_bench encoder-step --batch 512      one DEXML training step of a random-init BERT-style encoder
//                                            (6 layers, 768-d, 12 heads, max_len 32, bf16 autocast, fp32 AdamW as the trainer runs it):
//                                            queries/s and model-FLOPs utilisation against --peak-tflops
//   gpu_bench decoder-step --batch 256 --len 32   one training step of a Qwen2.5-0.5B-shaped random decoder
//                                            (24 layers, 896-d, 14 heads, 2 KV heads) with LoRA r 16 on every
//                                            projection, bf16 autocast: tokens/s and model-FLOPs utilisation
//   gpu_bench search --queries 100000 --keys 1000000 --dim 768    exact top-100 against the bare products
//   gpu_bench clustering --rows 2000000 --dim 768                 balanced 2-means into clusters of 16
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include <torch/torch.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#include "engine/index/exact_search.h"
#include "engine/loss/losses.h"
#include "engine/model/autocast.h"
#include "engine/model/bert/bert_encoder.h"
#include "engine/model/decoder/decoder_encoder.h"
#include "engine/optim/fused_adamw.h"
#include "engine/sampler/balanced_clustering.h"
#include "engine/session/devices.h"

namespace {

using Clock = std::chrono::steady_clock;

void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

torch::Tensor unit_rows(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1));
}

/// What the device is ("cuda:0: NVIDIA H100 80GB HBM3, 79.1 GiB").
std::string describe(const torch::Device& device) {
  const std::string id = device.is_cuda() ? "cuda:" + std::to_string(std::max<int>(0, device.index())) : "cpu";
  for (const auto& choice : xmc::device_choices())
    if (choice.id == id) return choice.description;
  return id;
}

/// Dense bf16 peak (TFLOP/s) of the GPUs these benchmarks were written for, by name; 0 = unknown.
double known_peak_tflops(const std::string& description) {
  if (description.find("H100") != std::string::npos) return description.find("PCIe") != std::string::npos ? 756 : 989;
  if (description.find("H200") != std::string::npos) return 989;
  if (description.find("A100") != std::string::npos) return 312;
  return 0;
}

struct Common {
  std::string device = torch::cuda::is_available() ? "cuda" : "cpu";
  int steps = 10;
  int warmup = 3;
  std::string trace;  // a Chrome trace of three more steps, when set
  int threads = 0;    // CPU threads for torch (0 = every core)
};

/// Seconds of one call of `step` on `device`: common.warmup calls first, then the mean of common.steps, the
/// device synchronised before and after.
template <typename Step>
double seconds_per_step(const Common& common, const torch::Device& device, Step&& step) {
  for (int i = 0; i < common.warmup; ++i) step();
  sync(device);
  const auto t0 = Clock::now();
  for (int i = 0; i < common.steps; ++i) step();
  sync(device);
  return seconds_since(t0) / common.steps;
}

/// Profiles three calls of `step` (after the timed ones) and writes their Chrome trace to `path`: every
/// kernel on the GPU and every operator on the host (bench/gpu/trace_summary.py reads it). LibTorch 2.x only.
template <typename Step>
void trace_steps(const std::string& path, const torch::Device& device, Step&& step) {
  if (path.empty()) return;
#if TORCH_VERSION_MAJOR >= 2
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  for (int i = 0; i < 3; ++i) step();
  sync(device);
  profiler::disableProfiler()->save(path);
#else
  (void)device; (void)step;
  std::fprintf(stderr, "gpu_bench: --trace needs LibTorch 2.x\n");
#endif
}

/// Token counts (markers included), one per line, as `xmc tokenize` gives them for a title set; empty when `path` is.
std::vector<std::int64_t> read_lengths(const std::string& path) {
  std::vector<std::int64_t> lengths;
  if (path.empty()) return lengths;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("--lengths " + path + ": cannot be read");
  std::int64_t n = 0;
  while (in >> n)
    if (n >= 2) lengths.push_back(n);
  if (lengths.empty()) throw std::runtime_error("--lengths " + path + ": no token count of at least 2 in it");
  return lengths;
}

int encoder_step(const Common& common, std::int64_t batch, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                 std::int64_t max_len, const std::string& precision, double peak_tflops, bool separate, const std::string& lengths_file,
                 const std::string& packing) {
  const torch::Device device(common.device);
  xmc::BertConfig config;
  config.num_layers = layers;
  config.hidden_size = hidden;
  config.num_heads = heads;
  config.intermediate_size = 4 * hidden;
  config.vocab_size = 30522;
  xmc::BertEncoderOptions options;
  options.device = device;
  options.max_len = max_len;
  options.autocast = precision == "bf16" ? torch::kBFloat16 : torch::kFloat;
  options.packing = packing == "on" ? xmc::BertPacking::on : packing == "off" ? xmc::BertPacking::off : xmc::BertPacking::automatic;
  torch::manual_seed(1);
  xmc::BertEncoder encoder(config, options);
  encoder->train();
  xmc::FusedAdamW optimizer(encoder->parameters(), torch::optim::AdamWOptions(1e-4).weight_decay(0.01));  // the trainer's optimiser
  // 2·batch texts: [CLS] random words [SEP]; queries then their positive labels. Each of exactly max_len tokens, or
  // (--lengths) of a title set's token counts, drawn in a seeded order and capped at max_len.
  const std::vector<std::int64_t> title_lengths = read_lengths(lengths_file);
  std::mt19937_64 draw(11);
  xmc::TokenizedCorpus corpus;
  std::uint32_t state = 7;
  double real_tokens = 0;
  for (std::int64_t t = 0; t < 2 * batch; ++t) {
    const std::int64_t length =
        title_lengths.empty() ? max_len : std::min(max_len, title_lengths[static_cast<std::size_t>(draw() % title_lengths.size())]);
    real_tokens += static_cast<double>(length);
    std::vector<std::int32_t> ids{101};
    for (std::int64_t i = 0; i < length - 2; ++i) {
      state = state * 1664525u + 1013904223u;
      ids.push_back(static_cast<std::int32_t>(1000 + (state >> 8) % 29000));
    }
    ids.push_back(102);
    corpus.append(ids);
  }
  std::vector<std::int64_t> queries(static_cast<std::size_t>(batch)), labels(static_cast<std::size_t>(batch));
  for (std::int64_t i = 0; i < batch; ++i) {
    queries[static_cast<std::size_t>(i)] = i;
    labels[static_cast<std::size_t>(i)] = batch + i;
  }
  const torch::Tensor positives = torch::eye(batch, torch::TensorOptions().dtype(torch::kBool).device(device));
  xmc::LossOptions loss_options;
  int passes = 0;  // what the last step made: 1 when the encoder joined queries and labels
  auto step = [&] {
    // As the trainer runs it (DualEncoderTraining): queries and labels in one pass when the encoder joins
    // them, else (--separate) one pass each.
    const auto query_input = encoder->prepare_input(corpus, queries, /*for_training=*/true);
    const auto label_input = encoder->prepare_input(corpus, labels, /*for_training=*/true);
    const auto joined = separate ? nullptr : encoder->join_inputs(*query_input, *label_input);
    passes = joined ? 1 : 2;
    torch::Tensor q, l;
    if (joined) {
      const torch::Tensor both = unit_rows(encoder->encode_input(*joined));
      q = both.narrow(0, 0, batch);
      l = both.narrow(0, batch, batch);
    } else {
      q = unit_rows(encoder->encode_input(*query_input));
      l = unit_rows(encoder->encode_input(*label_input));
    }
    const torch::Tensor loss = xmc::decoupled_softmax_loss(torch::matmul(q, l.t()), positives, loss_options);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
  };
  const double per_step = seconds_per_step(common, device, step);
  trace_steps(common.trace, device, step);
  // Training FLOPs = 3 × forward; forward per token and layer: 2·(4h² + 2h·ff) for the products with weights
  // plus 4·len·h for the attention scores and their weighted sum.
  // With --lengths, counted on the real tokens (the padding's work is none of the model's).
  const double h = static_cast<double>(hidden), ff = 4.0 * h, len = real_tokens / static_cast<double>(2 * batch);
  const double per_token = static_cast<double>(layers) * (2.0 * (4.0 * h * h + 2.0 * h * ff) + 4.0 * len * h);
  const double flops = 3.0 * per_token * real_tokens;
  const double achieved = flops / per_step / 1e12;
  const std::string about = describe(device);
  const double peak = peak_tflops > 0 ? peak_tflops : known_peak_tflops(about);
  std::printf("{\"bench\":\"encoder_step\",\"device\":\"%s\",\"peak_tflops\":%.0f,\"batch\":%lld,\"layers\":%lld,\"hidden\":%lld,\"max_len\":%lld,"
              "\"mean_tokens\":%.2f,\"packing\":\"%s\",\"precision\":\"%s\",\"passes\":%d,\"step_s\":%.5f,\"queries_per_s\":%.1f,"
              "\"model_tflops\":%.3f,\"mfu\":%s}\n",
              about.c_str(), peak, static_cast<long long>(batch), static_cast<long long>(layers), static_cast<long long>(hidden),
              static_cast<long long>(max_len), len, packing.c_str(), precision.c_str(), passes, per_step, static_cast<double>(batch) / per_step, achieved,
              peak > 0 ? std::to_string(achieved / peak).c_str() : "null");
  return 0;
}

int search(const Common& common, std::int64_t nq, std::int64_t m, std::int64_t d, std::int64_t k) {
  const torch::Device device(common.device);
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  const auto centres = unit_rows(torch::randn({2000, d}, device));
  auto around = [&](std::int64_t n) {
    const auto which = torch::randint(0, centres.size(0), {n}, torch::TensorOptions().device(device).dtype(torch::kLong));
    return unit_rows(centres.index_select(0, which) + torch::randn({n, d}, device) / std::sqrt(static_cast<double>(d)));
  };
  const auto keys = around(m);
  const auto queries = around(nq);
  xmc::ExactSearchOptions options;
  if (device.is_cuda()) {
    options.query_chunk = 8192;
    options.key_chunk = 65536;
  }
  options.query_chunk = xmc::exact_search_query_chunk(options);  // fixed here: the plain loops below read it
  double t_products = 1e30, t_exact = 1e30;
  for (int rep = 0; rep < std::max(1, common.steps / 5); ++rep) {  // interleaved, best of each
    sync(device);
    auto t0 = Clock::now();
    for (std::int64_t r0 = 0; r0 < nq; r0 += options.query_chunk)
      for (std::int64_t k0 = 0; k0 < m; k0 += options.key_chunk)
        (void)xmc::chunk_inner_products(queries.narrow(0, r0, std::min(options.query_chunk, nq - r0)),
                                        keys.narrow(0, k0, std::min(options.key_chunk, m - k0)));
    sync(device);
    t_products = std::min(t_products, seconds_since(t0));
    t0 = Clock::now();
    const xmc::TopK top = xmc::exact_top_k(queries, keys, k, options);
    sync(device);
    t_exact = std::min(t_exact, seconds_since(t0));
  }
  std::printf("{\"bench\":\"exact_search\",\"device\":\"%s\",\"queries\":%lld,\"keys\":%lld,\"dim\":%lld,\"k\":%lld,"
              "\"products_only_s\":%.4f,\"exact_top_k_s\":%.4f,\"ratio_to_products\":%.3f,\"target_ratio\":1.3}\n",
              common.device.c_str(), static_cast<long long>(nq), static_cast<long long>(m), static_cast<long long>(d),
              static_cast<long long>(k), t_products, t_exact, t_exact / t_products);
  return 0;
}

int clustering(const Common& common, std::int64_t n, std::int64_t d, std::int64_t cluster_size) {
  const torch::Device device(common.device);
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  const auto embeddings = unit_rows(torch::randn({n, d}, device));
  sync(device);
  const auto t0 = Clock::now();
  const auto clusters = xmc::balanced_clusters(embeddings, cluster_size);
  sync(device);
  const double seconds = seconds_since(t0);
  // The same clustering with every node read in place at every pass (no float copies): the default's gain.
  const auto t1 = Clock::now();
  const auto in_place = xmc::balanced_clusters(embeddings, cluster_size, {.copy_bytes = 1});
  sync(device);
  const double in_place_seconds = seconds_since(t1);
  if (in_place != clusters) std::fprintf(stderr, "clustering: reading in place gave other clusters\n");
  std::size_t largest = 0;
  for (const auto& c : clusters) largest = std::max(largest, c.size());
  std::printf("{\"bench\":\"clustering\",\"device\":\"%s\",\"rows\":%lld,\"dim\":%lld,\"cluster_size\":%lld,\"clusters\":%zu,"
              "\"largest\":%zu,\"seconds\":%.3f,\"read_in_place_seconds\":%.3f,\"same_clusters\":%s}\n",
              common.device.c_str(), static_cast<long long>(n), static_cast<long long>(d), static_cast<long long>(cluster_size),
              clusters.size(), largest, seconds, in_place_seconds, in_place == clusters ? "true" : "false");
  return 0;
}

/// One LoRA training step of a decoder encoder: forward of [batch, len] random token rows under autocast, a
/// squared error on the pooled vectors, backward, AdamW on the adapters. The frozen base gets no weight
/// gradients, so its training FLOPs are 2 × forward (forward and the input gradients); recomputation under
/// checkpointing is not counted.
int decoder_step(const Common& common, const xmc::DecoderConfig& shape, std::int64_t batch, std::int64_t len, std::int64_t rank,
                 const std::string& precision, bool checkpointing, double peak_tflops) {
  const torch::Device device(common.device);
  xmc::DecoderConfig config = shape;
  config.vocab_size = 151936;
  config.head_dim = config.hidden_size / config.num_heads;
  config.max_position_embeddings = std::max<std::int64_t>(len, 32);
  xmc::DecoderEncoderOptions options;
  options.device = device;
  options.max_len = len;
  options.autocast = xmc::parse_precision(precision, "--precision");
  options.checkpointing = checkpointing;
  options.lora.spec = {.rank = rank, .alpha = 2.0 * static_cast<double>(rank), .rslora = true, .dropout = 0.0};
  options.lora.targets = {"q", "k", "v", "o", "gate", "up", "down"};
  torch::manual_seed(1);
  xmc::DecoderEncoder model(config, options);
  model->train();
  xmc::FusedAdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-4).weight_decay(0.01));
  const auto on_device = torch::TensorOptions().device(device);
  const torch::Tensor ids = torch::randint(0, config.vocab_size, {batch, len}, on_device.dtype(torch::kLong));
  const torch::Tensor mask = torch::ones({batch, len}, on_device.dtype(torch::kBool));
  const torch::Tensor target = torch::randn({batch, config.hidden_size}, on_device);
  auto step = [&] {
    torch::Tensor pooled;
    {
      const xmc::AutocastScope mixed_precision(device, options.autocast);
      pooled = model->pool(model->forward(ids, mask), mask).to(torch::kFloat);
    }
    (pooled - target).pow(2).mean().backward();
    optimizer.step();
    optimizer.zero_grad();
  };
  const double per_step = seconds_per_step(common, device, step);
  trace_steps(common.trace, device, step);
  // Forward per token: 2 × the weights it multiplies (q, o: h²; k, v: h × kv·head_dim; gate, up, down: h × I;
  // the vocabulary is only looked up) plus 4·len·h for attention's scores and weighted sum.
  const double h = static_cast<double>(config.hidden_size), kv = static_cast<double>(config.num_kv_heads * config.head_dim);
  const double weights_per_layer = 2.0 * h * h + 2.0 * h * kv + 3.0 * h * static_cast<double>(config.intermediate_size);
  const double per_token = static_cast<double>(config.num_layers) * (2.0 * weights_per_layer + 4.0 * static_cast<double>(len) * h);
  const double tokens = static_cast<double>(batch * len);
  const double achieved = 2.0 * per_token * tokens / per_step / 1e12;
  const std::string about = describe(device);
  const double peak = peak_tflops > 0 ? peak_tflops : known_peak_tflops(about);
  std::int64_t trained = 0;
  for (const auto& p : model->parameters()) trained += p.numel();
  std::printf("{\"bench\":\"decoder_step\",\"device\":\"%s\",\"peak_tflops\":%.0f,\"layers\":%lld,\"hidden\":%lld,\"batch\":%lld,\"len\":%lld,"
              "\"lora_rank\":%lld,\"trained_parameters\":%lld,\"precision\":\"%s\",\"checkpointing\":%s,\"step_s\":%.5f,\"tokens_per_s\":%.0f,"
              "\"model_tflops\":%.2f,\"mfu\":%s}\n",
              about.c_str(), peak, static_cast<long long>(config.num_layers), static_cast<long long>(config.hidden_size),
              static_cast<long long>(batch), static_cast<long long>(len), static_cast<long long>(rank), static_cast<long long>(trained),
              precision.c_str(), checkpointing ? "true" : "false", per_step, tokens / per_step, achieved,
              peak > 0 ? std::to_string(achieved / peak).c_str() : "null");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GPU benchmarks of the CUDA path (JSON lines); --device cpu runs them small on any machine"};
  Common common;
  app.add_option("--device", common.device, "cuda or cpu (default: cuda when present)")->capture_default_str();
  app.add_option("--steps", common.steps, "Timed steps (repeats)")->capture_default_str();
  app.add_option("--warmup", common.warmup, "Untimed steps first")->capture_default_str();
  app.add_option("--threads", common.threads, "CPU threads for torch (0 = every core, as xmc train)")->capture_default_str();
  app.add_option("--trace", common.trace, "encoder-step, decoder-step: write a Chrome trace of three more steps here (LibTorch 2.x)");
  app.require_subcommand(1);
  std::int64_t batch = 512, layers = 6, hidden = 768, heads = 12, max_len = 32;
  std::string precision = "bf16";
  double peak = 0;
  auto* step_cmd = app.add_subcommand("encoder-step", "One DEXML training step of a BERT-style encoder");
  step_cmd->add_option("--batch", batch)->capture_default_str();
  step_cmd->add_option("--layers", layers)->capture_default_str();
  step_cmd->add_option("--hidden", hidden)->capture_default_str();
  step_cmd->add_option("--heads", heads)->capture_default_str();
  step_cmd->add_option("--max-len", max_len)->capture_default_str();
  step_cmd->add_option("--precision", precision, "bf16 or fp32")->check(CLI::IsMember({"bf16", "fp32"}))->capture_default_str();
  bool separate = false;
  step_cmd->add_flag("--separate", separate, "Encode queries and labels in two passes (the trainer joins them into one)");
  std::string lengths_file, packing = "auto";
  step_cmd->add_option("--lengths", lengths_file,
                       "Texts of real lengths: a file of token counts, one per line (e.g. `xmc tokenize` over a dataset's titles, counted); "
                       "default: every text max_len tokens");
  step_cmd->add_option("--packing", packing, "The encoder's encoder.packing: auto, on (real tokens only) or off (padded)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  step_cmd->add_option("--peak-tflops", peak, "The device's dense bf16 peak for the utilisation (default: known by name for H100, H200, A100)");
  xmc::DecoderConfig decoder;
  decoder.num_layers = 24;
  decoder.hidden_size = 896;
  decoder.num_heads = 14;
  decoder.num_kv_heads = 2;
  decoder.intermediate_size = 4864;
  std::int64_t decoder_batch = 256, decoder_len = 32, lora_rank = 16;
  bool checkpointing = false;
  auto* decoder_cmd = app.add_subcommand("decoder-step", "One LoRA training step of a decoder encoder (Qwen2.5-0.5B shape by default)");
  decoder_cmd->add_option("--batch", decoder_batch)->capture_default_str();
  decoder_cmd->add_option("--len", decoder_len)->capture_default_str();
  decoder_cmd->add_option("--layers", decoder.num_layers)->capture_default_str();
  decoder_cmd->add_option("--hidden", decoder.hidden_size)->capture_default_str();
  decoder_cmd->add_option("--heads", decoder.num_heads)->capture_default_str();
  decoder_cmd->add_option("--kv-heads", decoder.num_kv_heads)->capture_default_str();
  decoder_cmd->add_option("--intermediate", decoder.intermediate_size)->capture_default_str();
  decoder_cmd->add_option("--rank", lora_rank, "LoRA rank on every projection")->capture_default_str();
  decoder_cmd->add_option("--precision", precision, "bf16 or fp32")->check(CLI::IsMember({"bf16", "fp32"}))->capture_default_str();
  decoder_cmd->add_flag("--checkpointing", checkpointing, "Recompute each layer in backward");
  decoder_cmd->add_option("--peak-tflops", peak, "As for encoder-step");
  std::int64_t nq = 100'000, m = 1'000'000, d = 768, k = 100, rows = 2'000'000, cluster_size = 16;
  auto* search_cmd = app.add_subcommand("search", "Exact top-k against the bare products");
  search_cmd->add_option("--queries", nq)->capture_default_str();
  search_cmd->add_option("--keys", m)->capture_default_str();
  search_cmd->add_option("--dim", d)->capture_default_str();
  search_cmd->add_option("--k", k)->capture_default_str();
  auto* cluster_cmd = app.add_subcommand("clustering", "Balanced 2-means clustering");
  cluster_cmd->add_option("--rows", rows)->capture_default_str();
  cluster_cmd->add_option("--dim", d)->capture_default_str();
  cluster_cmd->add_option("--cluster-size", cluster_size)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(common.threads > 0 ? common.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  try {
    if (*step_cmd) return encoder_step(common, batch, layers, hidden, heads, max_len, precision, peak, separate, lengths_file, packing);
    if (*decoder_cmd) return decoder_step(common, decoder, decoder_batch, decoder_len, lora_rank, precision, checkpointing, peak);
    if (*search_cmd) return search(common, nq, m, d, k);
    return clustering(common, rows, d, cluster_size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bench: %s\n", e.what());
    return 1;
  }
}
