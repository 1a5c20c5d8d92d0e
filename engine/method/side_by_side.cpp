#include "engine/method/side_by_side.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include <exception>

namespace xmc {

bool side_by_side_available() { return at::get_num_threads() >= 2 && !at::in_parallel_region(); }

void run_side_by_side(const std::function<void()>& first, const std::function<void()>& second) {
  std::exception_ptr errors[2];
  auto run_part = [&](std::int64_t part) {
    try {
      part == 0 ? first() : second();
    } catch (...) {
      errors[part] = std::current_exception();
    }
  };
  if (side_by_side_available()) {
    const at::ThreadLocalState caller_state;
    // Range [0, 2) in chunks of 1: thread 0 runs part 0 and thread 1 part 1 (any further threads get no work).
    at::parallel_for(0, 2, 1, [&](std::int64_t begin, std::int64_t end) {
      const at::ThreadLocalStateGuard state_guard(caller_state);
      for (std::int64_t part = begin; part < end; ++part) run_part(part);
    });
  } else {
    run_part(0);
    run_part(1);
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace xmc
