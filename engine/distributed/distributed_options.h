#pragma once
// Plain data (no torch): where a process stands in a data-parallel training job and how it finds the others.
// `xmc train --nproc N` fills it for N local processes; `--rank/--world-size/--master` for several hosts.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace xmc {

struct DistributedOptions {
  int rank = 0;                          ///< this process, in [0, world_size)
  int world_size = 1;                    ///< processes in the job; 1 = no distribution
  std::string master_host = "127.0.0.1"; ///< where rank 0 listens for the rendezvous
  int master_port = 0;                   ///< its TCP port; 0 on rank 0 = any free port (local launches)
  int local_world_size = 1;              ///< processes sharing this machine's cores (they split the threads)
  double timeout_minutes = 30;           ///< a collective waiting longer than this fails the job

  bool enabled() const { return world_size > 1; }
};

/// "HOST:PORT" (IPv4 address or host name, port 1-65535) into `options`; anything else throws ConfigError
/// naming the value.
void parse_master_address(std::string_view text, DistributedOptions& options);

/// The scratch folder of worker `rank` running as process `pid` (its vocabulary, a received checkpoint): in
/// the temporary folder, so that the process that started it can remove it after a kill.
std::filesystem::path rank_scratch_directory(int rank, long pid);
/// rank_scratch_directory(), created empty: a worker killed together with its rank 0 leaves its folder
/// behind, and a later worker given the same pid must not find that job's files (its vocabulary) in it.
std::filesystem::path fresh_rank_scratch_directory(int rank, long pid);

/// Throws ConfigError when a batch of `batch_size` is too small to split over the job's processes (each takes
/// a share of every batch: at least 4 rows per process).
void check_batch_fits(std::int64_t batch_size, const DistributedOptions& options);

/// The collectives library of a job: "gloo" (on host memory; GPU tensors are staged through it) or "nccl"
/// (GPU to GPU). `requested` is the config's distributed.backend: "auto" takes NCCL for a CUDA device when
/// the build has it and each process has a GPU of its own (NCCL refuses two processes on one GPU), else Gloo.
/// `device` is the process's own ("cpu", "cuda:1"); `shares_gpu` says that other processes of this machine use
/// it too. Throws ConfigError naming the value when the request cannot be met (NCCL on the CPU or on a shared
/// GPU, a backend this build lacks).
std::string choose_collective_backend(const std::string& requested, const std::string& device, bool shares_gpu, bool have_gloo,
                                      bool have_nccl);

/// Throws ConfigError when rank/world size/port/timeout are out of range, naming the value.
void validate(const DistributedOptions& options);

}  // namespace xmc
