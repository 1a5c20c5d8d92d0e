#pragma once
// Plain C++ (no torch): ranks 1..N-1 of a data-parallel job on this machine, as child processes running
// `xmc train --rank R ...`, started by rank 0 (the process that owns the run) and watched by it. A worker
// that dies is named in rank 0's failure message; when rank 0 ends, workers still running are ended too.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/distributed/distributed_options.h"

namespace xmc {

/// A TCP port on 127.0.0.1 that was free a moment ago (for a local job's rendezvous).
int free_local_port();

/// The `xmc` binary beside the running program (the CLI itself, or the one installed with the workbench).
std::filesystem::path default_worker_binary();

class LocalWorkers {
 public:
  /// Starts ranks 1..options.world_size-1 of rank 0's `options` with `binary`. Throws xmc::Error naming the
  /// binary when it cannot be started.
  LocalWorkers(const std::filesystem::path& binary, const DistributedOptions& options);
  ~LocalWorkers();  ///< ends (SIGTERM, then SIGKILL) and reaps the workers still running
  LocalWorkers(const LocalWorkers&) = delete;
  LocalWorkers& operator=(const LocalWorkers&) = delete;

  /// How the workers that already ended badly ended ("rank 1 (pid 4242) was killed by signal 9"), waiting up
  /// to `grace` for one to end; "" when none did.
  std::string failures(std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  /// Waits for every worker to end; returns failures().
  std::string wait_all();
  /// Ends every worker still running.
  void terminate();

 private:
  struct Worker {
    int rank = 0;
    int pid = -1;
    bool ended = false;
    int status = 0;
  };
  void reap(bool block);
  std::vector<Worker> workers_;
};

}  // namespace xmc
