#include "engine/distributed/communicator.h"

// A build has Gloo when its headers were found (Debian: libgloo-dev; PyTorch's wheels lack them), NCCL when
// LibTorch was built with it and nccl.h was found (CMakeLists.txt decides both).
#if defined(XMC_HAVE_GLOO) || defined(XMC_HAVE_NCCL)
#define XMC_HAVE_C10D 1
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#ifdef XMC_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef XMC_HAVE_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>

#include "engine/core/error.h"
#include "engine/compat/torch_compat.h"

namespace xmc {

bool Communicator::has_gloo() {
#ifdef XMC_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

bool Communicator::has_nccl() {
#ifdef XMC_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

#ifdef XMC_HAVE_C10D
namespace {

std::string without_backtrace(const std::exception& e) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) return torch_error->what_without_backtrace();
  return e.what();
}

std::chrono::milliseconds timeout_of(const DistributedOptions& options) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_minutes * 60'000.0));
}

[[maybe_unused]] bool is_loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0; }

}  // namespace

struct Communicator::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<CollectiveGroup> group;
  std::string backend;                   ///< "gloo" or "nccl" once joined
  torch::Device staging{torch::kCPU};    ///< where collectives' tensors live: host memory (Gloo) or this rank's GPU (NCCL)
  std::int64_t holds = 0;                ///< hold_for_main() calls so far: names each one's store key
  std::int64_t shares = 0;               ///< share_from_main() and gather_at_main() calls so far: the same for their keys
};

Communicator::Communicator(const DistributedOptions& options) : options_(options), impl_(std::make_unique<Impl>()) {
  validate(options_);
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(options_.master_port);
  store_options.isServer = options_.rank == 0;
  store_options.numWorkers = static_cast<std::size_t>(options_.world_size);
  store_options.waitWorkers = false;
  // The rendezvous waits for every rank to come up: on one machine they start within seconds, so a rank
  // that died before joining is reported after two minutes rather than the whole timeout.
  store_options.timeout = options_.local_world_size == options_.world_size ? std::min(timeout_of(options_), std::chrono::milliseconds(120'000))
                                                                           : timeout_of(options_);
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>(options_.master_host, store_options);
  } catch (const std::exception& e) {
    throw Error("distributed training: rank " + std::to_string(options_.rank) + (options_.rank == 0 ? " cannot listen on " : " cannot reach rank 0 at ") +
                options_.master_host + ":" + std::to_string(options_.master_port) + " (" + without_backtrace(e) + ")");
  }
}

Communicator::~Communicator() = default;

int Communicator::port() const { return impl_->store->getPort(); }

std::string Communicator::backend() const { return impl_->backend; }

std::string Communicator::share_from_main(const std::string& bytes, const char* what) {
  if (options_.world_size == 1) return bytes;
  const std::string key = "xmc/shared/" + std::to_string(impl_->shares++);
  try {
    if (options_.rank == 0) {
      impl_->store->set(key, std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
      return bytes;
    }
    // If rank 0 dies first, the store's connection breaks and this throws at once.
    impl_->store->wait({key}, timeout_of(options_));
    const std::vector<std::uint8_t> value = impl_->store->get(key);
    return {value.begin(), value.end()};
  } catch (const std::exception& e) {
    throw Error("distributed training: rank " + std::to_string(options_.rank) + " lost rank 0 while it waited for " + what + " (" +
                without_backtrace(e) + ")");
  }
}

std::vector<std::string> Communicator::gather_at_main(const std::string& bytes, const char* what) {
  if (options_.world_size == 1) return {bytes};
  const std::string prefix = "xmc/gathered/" + std::to_string(impl_->shares++) + "/";
  try {
    if (options_.rank != 0) {
      impl_->store->set(prefix + std::to_string(options_.rank), std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
      return {};
    }
    std::vector<std::string> all{bytes};
    for (int r = 1; r < options_.world_size; ++r) {
      // A rank that died before reporting leaves its key unset: the store's timeout (two minutes on one
      // machine) ends the wait.
      impl_->store->wait({prefix + std::to_string(r)});
      const std::vector<std::uint8_t> value = impl_->store->get(prefix + std::to_string(r));
      all.emplace_back(value.begin(), value.end());
    }
    return all;
  } catch (const std::exception& e) {
    throw Error("distributed training: rank " + std::to_string(options_.rank) + " lost a rank while it gathered " + what + " (" +
                without_backtrace(e) + ")");
  }
}

void Communicator::join(torch::Device device, const std::string& backend) {
  if (impl_->group) return;
  choose_collective_backend(backend, device.str(), /*shares_gpu=*/false, has_gloo(), has_nccl());  // refuses one this build lacks
  try {
#ifdef XMC_HAVE_NCCL
    if (backend == "nccl") {
      // Collectives that wait on the host, so that a timeout throws here rather than aborting the process.
      ::setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
      c10::cuda::set_device(device.index());  // this rank's GPU only: no context on GPU 0 from every process
      auto group_options = c10d::ProcessGroupNCCL::Options::create();
      group_options->timeout = timeout_of(options_);
      impl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl_->store, options_.rank, options_.world_size, group_options);
      impl_->staging = device;
    }
#endif
#ifdef XMC_HAVE_GLOO
    if (backend == "gloo") {
      auto group_options = c10d::ProcessGroupGloo::Options::create(timeout_of(options_));
      // Loopback for a local job; otherwise the interface named by GLOO_SOCKET_IFNAME, or the one the host
      // name resolves to.
      const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
      if (is_loopback(options_.master_host)) group_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else if (interface != nullptr && *interface != '\0') group_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
      else group_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      group_options->threads = 1;  // collectives run one at a time; a second thread only competes for the cores
      impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, options_.rank, options_.world_size, group_options);
      impl_->staging = torch::Device(torch::kCPU);
    }
#endif
  } catch (const std::exception& e) {
    throw Error("distributed training: rank " + std::to_string(options_.rank) + " could not join the " + std::to_string(options_.world_size) +
                "-process " + backend + " group at " + options_.master_host + ":" + std::to_string(port()) + " (" + without_backtrace(e) + ")");
  }
  impl_->backend = backend;
  // NCCL makes its communicators at the first collective: make them now, where a failure says "joining".
  if (backend == "nccl") barrier("joining the NCCL group");
}

namespace {

/// A collective's failure, naming the collective and the rank.
[[noreturn]] void throw_collective_error(const DistributedOptions& options, const char* what, const std::exception& e) {
  const std::string why = without_backtrace(e);
  const bool lost = why.find("onnection") != std::string::npos || why.find("closed") != std::string::npos ||
                    why.find("Timed out") != std::string::npos || why.find("timed out") != std::string::npos ||
                    why.find("reset") != std::string::npos || why.find("Broken pipe") != std::string::npos;
  throw Error("distributed training: rank " + std::to_string(options.rank) + " of " + std::to_string(options.world_size) +
              (lost ? " lost the other ranks during " : " failed in ") + what + " (" + why + ")" +
              (lost ? "; another rank failed, was killed or waited longer than --timeout-minutes (see its message); "
                      "`xmc train --resume` continues the run from its last checkpoint"
                    : ""));
}

/// Runs one collective and waits for it; a failure names the collective and the rank.
template <typename Launch>
void run_collective(const DistributedOptions& options, const char* what, Launch&& launch) {
  try {
    auto work = launch();
    work->wait();
  } catch (const std::exception& e) {
    throw_collective_error(options, what, e);
  }
}

}  // namespace

struct PendingAllReduce::Impl {
  const DistributedOptions* options = nullptr;
  const char* what = "";
  c10::intrusive_ptr<c10d::Work> work;  ///< null once waited for
  std::vector<torch::Tensor> staged;    ///< what travels: the tensor itself, or its copy in the group's memory
  torch::Tensor target;                 ///< where the sum goes when staged is a copy
};

PendingAllReduce::PendingAllReduce() = default;
PendingAllReduce::PendingAllReduce(PendingAllReduce&&) noexcept = default;
PendingAllReduce& PendingAllReduce::operator=(PendingAllReduce&& other) noexcept {
  if (this != &other) {
    try {
      if (impl_) wait();
    } catch (...) {  // NOLINT(bugprone-empty-catch): see the destructor
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}

PendingAllReduce::~PendingAllReduce() {
  try {
    if (impl_) wait();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the collective's tensors must outlive it; its failure is reported by the rank's next one
  }
}

void PendingAllReduce::wait() {
  if (!impl_ || !impl_->work) return;
  const c10::intrusive_ptr<c10d::Work> work = std::move(impl_->work);
  try {
    work->wait();
  } catch (const std::exception& e) {
    throw_collective_error(*impl_->options, impl_->what, e);
  }
  if (impl_->target.defined()) impl_->target.copy_(impl_->staged[0]);
}

PendingAllReduce Communicator::start_all_reduce_sum(torch::Tensor tensor, const char* what) {
  PendingAllReduce pending;
  if (options_.world_size == 1 || tensor.numel() == 0) return pending;
  pending.impl_ = std::make_unique<PendingAllReduce::Impl>();
  PendingAllReduce::Impl& p = *pending.impl_;
  p.options = &options_;
  p.what = what;
  torch::Tensor staged = tensor.to(impl_->staging).contiguous();
  if (!staged.is_same(tensor)) p.target = tensor;
  p.staged.push_back(std::move(staged));
  try {
    p.work = impl_->group->allreduce(p.staged, c10d::AllreduceOptions{});
  } catch (const std::exception& e) {
    throw_collective_error(options_, what, e);
  }
  return pending;
}

// Gloo divides by the element count: an empty tensor (the same shape on every rank, so every rank skips it)
// never reaches it.

void Communicator::all_reduce_sum(torch::Tensor& tensor, const char* what) { start_all_reduce_sum(tensor, what).wait(); }

void Communicator::all_reduce_max(torch::Tensor& tensor, const char* what) {
  if (options_.world_size == 1 || tensor.numel() == 0) return;
  std::vector<torch::Tensor> staged{tensor.to(impl_->staging).contiguous()};
  c10d::AllreduceOptions reduce;
  reduce.reduceOp = c10d::ReduceOp::MAX;
  run_collective(options_, what, [&] { return impl_->group->allreduce(staged, reduce); });
  tensor.copy_(staged[0]);
}

void Communicator::broadcast(torch::Tensor& tensor, const char* what, int root) {
  if (options_.world_size == 1 || tensor.numel() == 0) return;
  std::vector<torch::Tensor> staged{tensor.to(impl_->staging).contiguous()};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  run_collective(options_, what, [&] { return impl_->group->broadcast(staged, options); });
  tensor.copy_(staged[0]);
}

torch::Tensor Communicator::all_gather_rows(const torch::Tensor& local, const char* what) {
  std::vector<std::int64_t> counts;
  return all_gather_rows(local, what, counts);
}

torch::Tensor Communicator::all_gather_rows(const torch::Tensor& local, const char* what, std::vector<std::int64_t>& counts) {
  counts.assign(1, local.size(0));
  if (options_.world_size == 1) return local;
  TORCH_CHECK(local.dim() >= 1, "all_gather_rows: a tensor with rows is needed");
  const auto world = static_cast<std::size_t>(options_.world_size);
  // Row counts first: Gloo gathers equal shapes, so every rank pads to the largest.
  torch::Tensor count = torch::tensor({local.size(0)}, torch::kInt64).to(impl_->staging);
  std::vector<torch::Tensor> counts_in{count};
  std::vector<std::vector<torch::Tensor>> counts_out(1);
  for (std::size_t r = 0; r < world; ++r) counts_out[0].push_back(torch::empty({1}, count.options()));
  run_collective(options_, what, [&] { return impl_->group->allgather(counts_out, counts_in); });
  // One copy to the host for all of them (on NCCL each .item() would wait for the GPU on its own).
  const torch::Tensor on_host = torch::cat(counts_out[0]).cpu();
  const auto* at = on_host.data_ptr<std::int64_t>();
  counts.assign(at, at + world);
  return gather_padded(local, counts, what);
}

torch::Tensor Communicator::all_gather_rows(const torch::Tensor& local, const std::vector<std::int64_t>& counts, const char* what) {
  if (options_.world_size == 1) return local;
  TORCH_CHECK(counts.size() == static_cast<std::size_t>(options_.world_size) && local.dim() >= 1 &&
                  counts[static_cast<std::size_t>(options_.rank)] == local.size(0),
              "all_gather_rows: rank ", options_.rank, " has ", local.size(0), " rows, its count says otherwise");
  return gather_padded(local, counts, what);
}

torch::Tensor Communicator::all_gather_shards(const torch::Tensor& local, std::int64_t total_rows, const char* what) {
  if (options_.world_size == 1) return local;
  std::vector<std::int64_t> counts;
  for (int r = 0; r < options_.world_size; ++r) {
    const auto [begin, end] = shard_range(total_rows, r, options_.world_size);
    counts.push_back(end - begin);
  }
  TORCH_CHECK(local.size(0) == counts[static_cast<std::size_t>(options_.rank)], "all_gather_shards: rank ", options_.rank, " has ",
              local.size(0), " rows, its shard of ", total_rows, " has ", counts[static_cast<std::size_t>(options_.rank)]);
  return gather_padded(local, counts, what);
}

torch::Tensor Communicator::gather_padded(const torch::Tensor& local, const std::vector<std::int64_t>& counts, const char* what) {
  const auto world = static_cast<std::size_t>(options_.world_size);
  const std::int64_t widest = *std::max_element(counts.begin(), counts.end());
  auto shape = local.sizes().vec();
  std::int64_t row_elements = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) row_elements *= shape[i];
  if (widest == 0 || row_elements == 0) {  // nothing anywhere (every rank knows the counts): no collective
    shape[0] = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
    return torch::zeros(shape, local.options());
  }

  shape[0] = widest;
  // Gloo has no bool: masks travel as bytes.
  const bool is_bool = local.scalar_type() == torch::kBool;
  torch::Tensor padded = torch::zeros(shape, local.options().device(impl_->staging).dtype(is_bool ? torch::kUInt8 : local.scalar_type()));
  padded.narrow(0, 0, local.size(0)).copy_(local.detach());
  std::vector<torch::Tensor> in{padded};
  std::vector<std::vector<torch::Tensor>> out(1);
  for (std::size_t r = 0; r < world; ++r) out[0].push_back(torch::empty(shape, padded.options()));
  run_collective(options_, what, [&] { return impl_->group->allgather(out, in); });
  std::vector<torch::Tensor> parts;
  for (std::size_t r = 0; r < world; ++r) parts.push_back(out[0][r].narrow(0, 0, counts[r]));
  torch::Tensor all = torch::cat(parts);
  return (is_bool ? all.to(torch::kBool) : all).to(local.device());
}

std::string Communicator::broadcast_bytes(const std::string& bytes, const char* what, int root) {
  if (options_.world_size == 1) return bytes;
  torch::Tensor size = torch::tensor({static_cast<std::int64_t>(bytes.size())}, torch::kInt64);
  broadcast(size, what, root);
  torch::Tensor data = torch::empty({size.item<std::int64_t>()}, torch::kUInt8);
  if (options_.rank == root) std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(data.data_ptr<std::uint8_t>()));
  if (data.numel() > 0) broadcast(data, what, root);
  return {reinterpret_cast<const char*>(data.data_ptr<std::uint8_t>()), static_cast<std::size_t>(data.numel())};
}

void Communicator::hold_for_main(const char* what) {
  if (options_.world_size == 1) return;
  const std::string key = "xmc/hold/" + std::to_string(impl_->holds++);
  try {
    if (options_.rank == 0) {
      impl_->store->set(key, std::vector<std::uint8_t>{1});
    } else {
      // A week: rank 0 may evaluate a large label set or stay paused; if it dies, the store's connection
      // breaks and this throws at once.
      impl_->store->wait({key}, std::chrono::hours(24 * 7));
    }
  } catch (const std::exception& e) {
    throw Error("distributed training: rank " + std::to_string(options_.rank) + " lost rank 0 while it waited for its " + what + " (" +
                without_backtrace(e) + "); `xmc train --resume` continues the run from its last checkpoint");
  }
}

void Communicator::barrier(const char* what) {
  if (options_.world_size == 1) return;
  // An all-reduce of one number: a barrier that fails like every other collective.
  torch::Tensor token = torch::zeros({1});
  all_reduce_sum(token, what);
}

#else

// Built without Gloo and NCCL: every rank refuses at once, naming what is missing.
struct Communicator::Impl {};

Communicator::Communicator(const DistributedOptions& options) : options_(options) {
  validate(options_);
  throw Error("distributed training: this xmc was built without Gloo's headers (libgloo-dev) and without NCCL, so it cannot "
              "train with several processes; rebuild after packaging/setup.sh deps, or train in one process");
}
Communicator::~Communicator() = default;
int Communicator::port() const { return options_.master_port; }
std::string Communicator::backend() const { return {}; }
std::string Communicator::share_from_main(const std::string& bytes, const char*) { return bytes; }
std::vector<std::string> Communicator::gather_at_main(const std::string& bytes, const char*) { return {bytes}; }
void Communicator::join(torch::Device, const std::string&) {}
void Communicator::all_reduce_sum(torch::Tensor&, const char*) {}
void Communicator::all_reduce_max(torch::Tensor&, const char*) {}
struct PendingAllReduce::Impl {};
PendingAllReduce::PendingAllReduce() = default;
PendingAllReduce::PendingAllReduce(PendingAllReduce&&) noexcept = default;
PendingAllReduce& PendingAllReduce::operator=(PendingAllReduce&&) noexcept = default;
PendingAllReduce::~PendingAllReduce() = default;
void PendingAllReduce::wait() {}
PendingAllReduce Communicator::start_all_reduce_sum(torch::Tensor, const char*) { return {}; }
void Communicator::broadcast(torch::Tensor&, const char*, int) {}
torch::Tensor Communicator::all_gather_rows(const torch::Tensor& local, const char*) { return local; }
torch::Tensor Communicator::all_gather_rows(const torch::Tensor& local, const char*, std::vector<std::int64_t>& counts) {
  counts.assign(1, local.size(0));
  return local;
}
torch::Tensor Communicator::all_gather_rows(const torch::Tensor& local, const std::vector<std::int64_t>&, const char*) { return local; }
torch::Tensor Communicator::all_gather_shards(const torch::Tensor& local, std::int64_t, const char*) { return local; }
torch::Tensor Communicator::gather_padded(const torch::Tensor& local, const std::vector<std::int64_t>&, const char*) { return local; }
std::string Communicator::broadcast_bytes(const std::string& bytes, const char*, int) { return bytes; }
void Communicator::barrier(const char*) {}
void Communicator::hold_for_main(const char*) {}

#endif  // XMC_HAVE_C10D

std::pair<std::int64_t, std::int64_t> shard_range(std::int64_t count, int rank, int world) {
  const std::int64_t base = count / world;
  const std::int64_t extra = count % world;
  const std::int64_t begin = rank * base + std::min<std::int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

std::span<const std::int64_t> own_shard(std::span<const std::int64_t> rows, const Communicator& communicator) {
  const auto [begin, end] = shard_range(static_cast<std::int64_t>(rows.size()), communicator.rank(), communicator.world_size());
  return rows.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
}

namespace {

struct GatherRowsWithGrad : public torch::autograd::Function<GatherRowsWithGrad> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& local, std::int64_t communicator_address,
                               std::int64_t total_rows) {
    auto* communicator = reinterpret_cast<Communicator*>(communicator_address);
    ctx->saved_data["communicator"] = communicator_address;
    ctx->saved_data["offset"] = shard_range(total_rows, communicator->rank(), communicator->world_size()).first;
    ctx->saved_data["rows"] = local.size(0);
    return communicator->all_gather_shards(local.detach(), total_rows, "gathering embeddings");
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad_outputs) {
    auto* communicator = reinterpret_cast<Communicator*>(ctx->saved_data["communicator"].toInt());
    torch::Tensor grad = grad_outputs[0].contiguous().clone();
    communicator->all_reduce_sum(grad, "reducing embedding gradients");
    return {grad.narrow(0, ctx->saved_data["offset"].toInt(), ctx->saved_data["rows"].toInt()), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor all_gather_rows_with_grad(Communicator& communicator, const torch::Tensor& local, std::int64_t total_rows) {
  if (communicator.world_size() == 1) return local;
  // Every rank must run the backward all-reduce: a shard without a graph (an empty one, say) still takes part.
  const torch::Tensor input = torch::GradMode::is_enabled() && !local.requires_grad() ? local.detach().requires_grad_(true) : local;
  return GatherRowsWithGrad::apply(input, reinterpret_cast<std::int64_t>(&communicator), total_rows);
}

}  // namespace xmc
