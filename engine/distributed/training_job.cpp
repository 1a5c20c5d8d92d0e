#include "engine/distributed/training_job.h"

#include <nlohmann/json.hpp>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/core/json_file.h"
#include "engine/core/splitmix64.h"
#include "engine/data/dataset.h"
#include "engine/model/encoder_factory.h"

namespace xmc {
namespace {

void write_file_bytes(const std::filesystem::path& path, const std::string& bytes) {
  AtomicFileWriter writer(path, std::ios::out | std::ios::binary);
  writer.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  writer.commit();
}

/// This process's device in the job: "cuda" becomes one GPU per local process. Sets `shares_gpu` when other
/// processes of this machine train on the same device.
std::string rank_device(const DistributedOptions& options, const std::string& configured, bool& shares_gpu) {
  const int local = options.local_world_size;
  shares_gpu = false;
  if (configured.rfind("cuda", 0) != 0 || !torch::cuda::is_available()) return configured;
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  shares_gpu = local > 1 && (configured != "cuda" || local > gpus);
  if (configured != "cuda" || local == 1) return configured;
  return "cuda:" + std::to_string(options.rank % local % gpus);
}

/// Sets this rank's device in `config` and returns the backend it joins with: `requested` (auto, gloo, nccl)
/// checked against that device and this build. Throws ConfigError naming what it cannot use.
std::string settle_device_and_backend(const DistributedOptions& options, TrainConfig& config, const std::string& requested) {
  bool shares_gpu = false;
  const std::string own_device = rank_device(options, config.device, shares_gpu);
  parse_device(own_device);
  const std::string backend = choose_collective_backend(requested, own_device, shares_gpu, Communicator::has_gloo(), Communicator::has_nccl());
  config.device = own_device;
  return backend;
}

/// Why this rank cannot take part in the job rank 0 described ("" when it can): its device, the backend, the dataset.
std::string readiness(const DistributedOptions& options, TrainConfig& config, const nlohmann::json& handshake) {
  try {
    settle_device_and_backend(options, config, handshake.at("backend").get<std::string>());
    const auto fingerprint = dataset_fingerprint(config.dataset);
    if (fingerprint != handshake.at("fingerprint").get<std::string>())
      return "the dataset at " + config.dataset.string() + " is not rank 0's (fingerprint " + fingerprint + ", rank 0 has " +
             handshake.at("fingerprint").get<std::string>() + "); every rank must see the same data";
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

JoinedJob join_training_job(Communicator& communicator, JobJoinRequest request) {
  const DistributedOptions& options = request.options;
  auto phase = [&](const std::string& message) {
    if (request.phase) request.phase(message);
  };
  JoinedJob job;
  const bool main = options.rank == 0;
  phase("joining the " + std::to_string(options.world_size) + "-process group as rank " + std::to_string(options.rank));
  nlohmann::json handshake;
  std::string own_problem;
  if (main) {
    try {
      const std::string shared_config = to_json(request.config);  // "cuda" as configured: each rank picks its own GPU
      const std::string backend = settle_device_and_backend(options, request.config, request.config.distributed_backend);
      handshake = {{"config", shared_config},
                   {"backend", backend},
                   {"run_id", request.run_id},
                   {"store_id", request.store_id},
                   {"fingerprint", dataset_fingerprint(request.config.dataset)},
                   {"resume", request.resume}};
    } catch (const std::exception& e) {
      own_problem = e.what();
      handshake = {{"problem", own_problem}};
    }
  }
  handshake = nlohmann::json::parse(communicator.share_from_main(handshake.dump(), "the run's config"));
  if (!main) {
    if (handshake.contains("problem"))
      throw Error("rank 0 stopped the job before it started: " + handshake.at("problem").get<std::string>());
    request.config = parse_train_config(handshake.at("config").get<std::string>(), "rank 0's config");
    own_problem = readiness(options, request.config, handshake);
  } else if (!own_problem.empty()) {
    throw ConfigError(own_problem);
  }
  const std::vector<std::string> problems = communicator.gather_at_main(own_problem, "whether every rank can take part");
  if (!own_problem.empty()) throw ConfigError(own_problem);  // reported: rank 0 names it and stops the others
  std::string verdict;
  for (std::size_t r = 1; r < problems.size() && verdict.empty(); ++r)
    if (!problems[r].empty()) verdict = "rank " + std::to_string(r) + " cannot take part: " + problems[r];
  verdict = communicator.share_from_main(verdict, "rank 0's go-ahead");
  if (!verdict.empty()) throw Error(verdict);
  const std::string backend = handshake.at("backend").get<std::string>();
  communicator.join(parse_device(request.config.device), backend);
  phase("joined the " + backend + " group");
  std::string checkpoint_bytes;
  if (main && request.resume) checkpoint_bytes = read_whole_file(request.checkpoint);
  if (handshake.at("resume").get<bool>()) checkpoint_bytes = communicator.broadcast_bytes(checkpoint_bytes, "sending the checkpoint");
  job.config = std::move(request.config);
  job.run_id = request.run_id;
  job.store_id = request.store_id;
  job.resume = request.resume;
  if (main) return job;
  job.run_id = handshake.at("run_id").get<std::int64_t>();
  job.store_id = handshake.at("store_id").get<std::string>();
  job.resume = handshake.at("resume").get<bool>();
  if (job.resume) write_file_bytes(request.checkpoint, checkpoint_bytes);
  return job;
}

void share_parameters(Communicator& communicator, std::vector<torch::Tensor> tensors) {
  std::int64_t elements = 0;
  for (const auto& t : tensors) elements += t.numel();
  torch::Tensor extremes = torch::tensor({static_cast<double>(elements), -static_cast<double>(elements)}, torch::kDouble);
  communicator.all_reduce_max(extremes, "comparing model sizes");
  if (extremes[0].item<double>() != -extremes[1].item<double>())
    throw Error("rank " + std::to_string(communicator.rank()) + " built a model of " + std::to_string(elements) +
                " numbers, but another rank's differs (largest " + std::to_string(static_cast<std::int64_t>(extremes[0].item<double>())) +
                "): the ranks read different data or vocabularies");
  torch::NoGradGuard no_grad;
  for (auto& t : tensors) communicator.broadcast(t, "sharing rank 0's parameters");
}

void share_batches(Communicator& communicator, std::vector<std::vector<std::int64_t>>& batches) {
  torch::Tensor count = torch::tensor({static_cast<std::int64_t>(batches.size())}, torch::kInt64);
  communicator.broadcast(count, "sharing the epoch's batches");
  batches.resize(static_cast<std::size_t>(count.item<std::int64_t>()));
  torch::Tensor sizes = torch::empty({count.item<std::int64_t>()}, torch::kInt64);
  for (std::size_t b = 0; b < batches.size(); ++b) sizes[static_cast<std::int64_t>(b)] = static_cast<std::int64_t>(batches[b].size());
  communicator.broadcast(sizes, "sharing the epoch's batches");
  torch::Tensor rows = torch::empty({sizes.sum().item<std::int64_t>()}, torch::kInt64);
  if (communicator.rank() == 0) {
    std::int64_t at = 0;
    auto* out = rows.data_ptr<std::int64_t>();
    for (const auto& batch : batches)
      for (const std::int64_t r : batch) out[at++] = r;
  }
  communicator.broadcast(rows, "sharing the epoch's batches");
  const auto* in = rows.data_ptr<std::int64_t>();
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto size = static_cast<std::size_t>(sizes[static_cast<std::int64_t>(b)].item<std::int64_t>());
    batches[b].assign(in, in + size);
    in += size;
  }
}

std::uint64_t worker_step_seed(std::uint64_t seed, int rank, std::int64_t step) {
  return splitmix64_mix(seed + kSplitmix64Increment * (static_cast<std::uint64_t>(rank) + 1) +
                        0xD1B54A32D192ED03ULL * static_cast<std::uint64_t>(step));
}

}  // namespace xmc
