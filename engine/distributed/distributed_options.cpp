#include "engine/distributed/distributed_options.h"

#include <cctype>
#include <charconv>

#include "engine/core/error.h"

namespace xmc {

void parse_master_address(std::string_view text, DistributedOptions& options) {
  const auto colon = text.rfind(':');
  auto refuse = [&](const std::string& why) {
    throw ConfigError("--master: got \"" + std::string(text) + "\": " + why + " (expected HOST:PORT, e.g. 10.0.0.1:29500)");
  };
  if (colon == std::string_view::npos) refuse("no port");
  const std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.empty()) refuse("no host");
  for (const char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) refuse("the host has a character that no host name has");
  int value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || error != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535)
    refuse("the port is not a number in 1-65535");
  options.master_host = std::string(host);
  options.master_port = value;
}

std::filesystem::path rank_scratch_directory(int rank, long pid) {
  return std::filesystem::temp_directory_path() / ("xmc-rank" + std::to_string(rank) + "-" + std::to_string(pid));
}

std::filesystem::path fresh_rank_scratch_directory(int rank, long pid) {
  const std::filesystem::path folder = rank_scratch_directory(rank, pid);
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  return folder;
}

void check_batch_fits(std::int64_t batch_size, const DistributedOptions& options) {
  if (options.enabled() && batch_size < 4 * options.world_size)
    throw ConfigError("batch_size: got " + std::to_string(batch_size) + "; with " + std::to_string(options.world_size) +
                      " processes it must be at least " + std::to_string(4 * options.world_size) + " (every process takes a share of each batch)");
}

std::string choose_collective_backend(const std::string& requested, const std::string& device, bool shares_gpu, bool have_gloo,
                                      bool have_nccl) {
  const bool cuda = device.rfind("cuda", 0) == 0;
  if (requested == "nccl") {
    if (!have_nccl)
      throw ConfigError("distributed.backend: got \"nccl\", but this xmc was built without NCCL (it needs a CUDA LibTorch with NCCL "
                        "and nccl.h); use gloo or auto");
    if (!cuda) throw ConfigError("distributed.backend: got \"nccl\", which runs on GPUs only, for device " + device + "; use gloo or auto");
    if (shares_gpu)
      throw ConfigError("distributed.backend: got \"nccl\", but processes of this machine share device " + device +
                        " (NCCL needs a GPU per process: no more processes than GPUs, and device cuda rather than cuda:N); use gloo or auto");
    return "nccl";
  }
  if (requested == "gloo") {
    if (!have_gloo)
      throw ConfigError("distributed.backend: got \"gloo\", but this xmc was built without Gloo's headers (libgloo-dev)" +
                        std::string(have_nccl ? "; use nccl on GPUs" : ""));
    return "gloo";
  }
  if (requested != "auto") throw ConfigError("distributed.backend: got \"" + requested + "\", expected auto, gloo or nccl");
  if (cuda && have_nccl && !shares_gpu) return "nccl";
  if (have_gloo) return "gloo";
  throw ConfigError("this xmc cannot train with several processes on device " + device + ": it was built without Gloo's headers (libgloo-dev)" +
                    std::string(have_nccl ? ", and NCCL needs a GPU per process" : " and without NCCL") +
                    "; rebuild after packaging/setup.sh deps, or train in one process");
}

void validate(const DistributedOptions& options) {
  if (options.world_size < 1 || options.world_size > 4096)
    throw ConfigError("--world-size: got " + std::to_string(options.world_size) + "; it must be in 1-4096");
  if (options.rank < 0 || options.rank >= options.world_size)
    throw ConfigError("--rank: got " + std::to_string(options.rank) + "; with --world-size " + std::to_string(options.world_size) +
                      " it must be in 0-" + std::to_string(options.world_size - 1));
  if (options.master_port < 0 || options.master_port > 65535)
    throw ConfigError("--master: port " + std::to_string(options.master_port) + " is not in 1-65535");
  if (options.rank > 0 && options.master_port == 0)
    throw ConfigError("--rank " + std::to_string(options.rank) + " needs --master HOST:PORT (where rank 0 listens)");
  if (options.local_world_size < 1 || options.local_world_size > options.world_size)
    throw ConfigError("local processes: got " + std::to_string(options.local_world_size) + "; it must be in 1-" +
                      std::to_string(options.world_size));
  if (!(options.timeout_minutes > 0) || !(options.timeout_minutes <= 10080))
    throw ConfigError("--timeout-minutes: got " + std::to_string(options.timeout_minutes) + "; it must be in (0, 10080] (a week)");
}

}  // namespace xmc
