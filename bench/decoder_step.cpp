// One training step of the decoder encoder with LoRA, timed: forward of a batch of token rows, a loss on the
// pooled vectors, backward, an AdamW step on the adapters. bench/reference/decoder_step.py does the same in
// plain PyTorch (same shapes, same arithmetic); bench/decoder_step.sh runs both side by side. Prints one JSON
// line: median seconds a step, tokens a second, and the process's peak RSS.
//   bench_decoder_step --layers 24 --hidden 896 --heads 14 --kv-heads 2 --intermediate 4864 --batch 32 --len 32
#include <CLI/CLI.hpp>
#include <sys/resource.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "engine/core/allocator_tuning.h"
#include "engine/core/blas_threads.h"
#include "engine/model/cpu_thread_policy.h"
#include "engine/model/decoder/decoder_encoder.h"
#include "engine/optim/fused_adamw.h"

int main(int argc, char** argv) {
  CLI::App app{"Time a decoder-encoder training step with LoRA adapters"};
  xmc::DecoderConfig config;
  config.vocab_size = 151936;
  std::int64_t batch = 32, length = 32, rank = 16, steps = 5, threads = 2;
  double alpha = 32;
  bool checkpointing = false;
  std::string threading = "model";
  std::string base_dtype = "fp32";
  app.add_option("--layers", config.num_layers)->capture_default_str();
  app.add_option("--hidden", config.hidden_size)->capture_default_str();
  app.add_option("--heads", config.num_heads)->capture_default_str();
  app.add_option("--kv-heads", config.num_kv_heads)->capture_default_str();
  app.add_option("--intermediate", config.intermediate_size)->capture_default_str();
  app.add_option("--vocab", config.vocab_size)->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--len", length)->capture_default_str();
  app.add_option("--rank", rank, "LoRA rank (0 = every weight trained)")->capture_default_str();
  app.add_option("--alpha", alpha)->capture_default_str();
  app.add_option("--steps", steps, "Timed steps (after one warm-up step)")->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  app.add_flag("--checkpointing", checkpointing, "Recompute each layer in backward");
  app.add_option("--threading", threading,
                 "model: the trainer's choice for this model (cpu_thread_policy.h); torch: LibTorch's threads, BLAS on the caller")
      ->capture_default_str();
  app.add_option("--base-dtype", base_dtype, "fp32 | bf16 frozen weights")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  config.head_dim = config.hidden_size / config.num_heads;
  config.max_position_embeddings = std::max<std::int64_t>(length, 32);
  xmc::keep_freed_memory_for_reuse();
  torch::manual_seed(0);

  xmc::DecoderEncoderOptions options;
  options.max_len = length;
  options.checkpointing = checkpointing;
  options.lora.spec = {.rank = rank, .alpha = alpha, .rslora = true, .dropout = 0.0};
  options.lora.targets = {"q", "k", "v", "o", "gate", "up", "down"};
  options.lora.base_dtype = base_dtype == "bf16" ? torch::kBFloat16 : torch::kFloat;
  xmc::DecoderEncoder model(config, options);
  model->train();
  if (threading == "model") {
    xmc::use_cpu_threads(*model, static_cast<int>(threads));
  } else {
    torch::set_num_threads(static_cast<int>(threads));
    xmc::run_blas_on_calling_thread();
  }
  xmc::FusedAdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-4).weight_decay(0.01));
  const torch::Tensor ids = torch::randint(0, config.vocab_size, {batch, length}, torch::kLong);
  const torch::Tensor mask = torch::ones({batch, length}, torch::kBool);
  const torch::Tensor target = torch::randn({batch, config.hidden_size});

  std::vector<double> seconds;
  for (std::int64_t step = 0; step <= steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    optimizer.zero_grad();
    const torch::Tensor pooled = model->pool(model->forward(ids, mask), mask);
    const torch::Tensor loss = (pooled - target).pow(2).mean();
    loss.backward();
    optimizer.step();
    if (step > 0) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::int64_t trained = 0;
  for (const auto& p : model->parameters()) trained += p.numel();
  std::cout << "{\"impl\": \"xmc\", \"layers\": " << config.num_layers << ", \"hidden\": " << config.hidden_size << ", \"batch\": " << batch
            << ", \"len\": " << length << ", \"rank\": " << rank << ", \"checkpointing\": " << (checkpointing ? "true" : "false")
            << ", \"base_dtype\": \"" << base_dtype << "\", \"threads\": " << threads << ", \"threading\": \"" << threading << "\"" << ", \"trained_parameters\": " << trained
            << ", \"step_s\": " << median << ", \"tokens_per_s\": " << static_cast<double>(batch * length) / median
            << ", \"peak_rss_mb\": " << static_cast<double>(usage.ru_maxrss) / 1024.0 << "}" << std::endl;
  return 0;
}
