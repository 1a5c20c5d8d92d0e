#pragma once
// Test support: a Gloo process group of `world` ranks as threads of this process, each with its own
// Communicator (rank 0 listens on a free loopback port), running `body(communicator)` on every rank.
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/distributed/communicator.h"

namespace xmc::test {

inline void run_ranks(int world, const std::function<void(Communicator&)>& body) {
  DistributedOptions options;
  options.world_size = world;
  options.timeout_minutes = 1;
  auto root = std::make_unique<Communicator>(options);
  options.master_port = root->port();
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        std::unique_ptr<Communicator> own;
        if (rank > 0) {
          DistributedOptions mine = options;
          mine.rank = rank;
          own = std::make_unique<Communicator>(mine);
        }
        Communicator& communicator = rank == 0 ? *root : *own;
        communicator.join(torch::kCPU, "gloo");
        body(communicator);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace xmc::test
