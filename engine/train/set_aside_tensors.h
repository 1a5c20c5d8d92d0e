#pragma once
// Engine-internal (includes torch). Tensors that nothing reads for a while, written to a file and their memory
// handed back, then read back bit for bit: while an evaluation between epochs runs, the optimiser's moments and a
// method's hard-negative shortlists (2.1 GB at 1.3M labels and 2.25M training queries) make room for its label
// matrices instead of lying under them.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace xmc {

class SetAsideTensors {
 public:
  /// Of `tensors`, those that can be set aside (set_aside_bytes() counts them): CPU, contiguous, covering their whole
  /// storage, which nothing else shares. Others stay as they are.
  static std::vector<torch::Tensor> eligible(const std::vector<torch::Tensor>& tensors);
  static std::int64_t set_aside_bytes(const std::vector<torch::Tensor>& tensors);

  /// Writes the eligible `tensors` to `file` (replacing it), then frees their storage: each handle, and every
  /// handle sharing its tensor, holds no elements until restore(). Nothing is freed unless the whole file was
  /// written: on a write error (a full disk) it throws Error naming the file, the tensors as they were.
  SetAsideTensors(const std::vector<torch::Tensor>& tensors, std::filesystem::path file);
  SetAsideTensors(const SetAsideTensors&) = delete;
  SetAsideTensors& operator=(const SetAsideTensors&) = delete;
  /// Deletes the file if restore() was not called (the tensors stay empty).
  ~SetAsideTensors();

  /// Reads the tensors back into fresh storage of their shape and type, where they were, and deletes the file.
  /// Throws Error naming the file when it cannot (a file cut short or gone); the tensors then stay empty.
  void restore();
  std::int64_t bytes() const { return bytes_; }

 private:
  struct Held {
    torch::Tensor tensor;  ///< shares the caller's tensor: set_() on it empties and refills theirs
    std::vector<std::int64_t> sizes;  ///< its shape before it was emptied (its type it keeps)
  };
  std::vector<Held> held_;
  std::filesystem::path file_;
  std::int64_t bytes_ = 0;
  bool restored_ = false;
};

/// `idle` (an evaluation's idle state: the optimiser's moments, a method's shortlists) set aside in `file` when it takes
/// at least `min_mb` MB (`before` is called first: whatever might read it meanwhile lets go), the memory handed back and
/// `phase` told; null when smaller, or when it could not be written (a full disk: then it stays in memory, said in
/// `phase`, and the run goes on).
std::unique_ptr<SetAsideTensors> set_aside_if_large(std::vector<torch::Tensor> idle, std::int64_t min_mb, const std::filesystem::path& file,
                                                    const std::function<void()>& before, const std::function<void(const std::string&)>& phase);

/// Reads `aside` back (when set) and releases it. When it cannot, `lost` is set to why (a checkpoint written from
/// this process would save the empty tensors over the last good one) and the error is thrown.
void bring_back(std::unique_ptr<SetAsideTensors>& aside, std::string& lost);

/// `work()` run with `idle` set aside (set_aside_if_large's arguments), brought back after it whether it returns or
/// throws (bring_back).
template <class Work>
auto with_set_aside(std::vector<torch::Tensor> idle, std::int64_t min_mb, const std::filesystem::path& file, const std::function<void()>& before,
                    const std::function<void(const std::string&)>& phase, std::string& lost, Work&& work) {
  std::unique_ptr<SetAsideTensors> aside = set_aside_if_large(std::move(idle), min_mb, file, before, phase);
  decltype(work()) result;
  try {
    result = work();
  } catch (...) {
    bring_back(aside, lost);
    throw;
  }
  bring_back(aside, lost);
  return result;
}

}  // namespace xmc
