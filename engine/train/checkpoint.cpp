#include "engine/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <unistd.h>

#include "engine/core/error.h"
#include "engine/method/method.h"

namespace xmc {
namespace {

torch::Tensor bytes_tensor(const std::string& s) {
  return torch::from_blob(const_cast<char*>(s.data()), {static_cast<std::int64_t>(s.size())}, torch::kUInt8).clone();
}

std::string tensor_bytes(const torch::Tensor& t) {
  const auto c = t.contiguous();
  return {reinterpret_cast<const char*>(c.data_ptr<std::uint8_t>()), static_cast<std::size_t>(c.numel())};
}

torch::Tensor scalar(std::int64_t v) { return torch::tensor({v}, torch::kInt64); }

std::int64_t read_int(torch::serialize::InputArchive& a, const char* key) {
  torch::Tensor t;
  a.read(key, t);
  return t.item<std::int64_t>();
}

void write_state(torch::serialize::OutputArchive& a, const TrainingState& s) {
  a.write("phase", bytes_tensor(s.stage));
  a.write("epoch", scalar(s.epoch));
  a.write("batch_in_epoch", scalar(s.batch_in_epoch));
  a.write("step", scalar(s.step));
  a.write("stage_start_step", scalar(s.stage_start_step));
  std::vector<std::int64_t> sizes, flat;
  for (const auto& b : s.epoch_batches) {
    sizes.push_back(static_cast<std::int64_t>(b.size()));
    flat.insert(flat.end(), b.begin(), b.end());
  }
  a.write("batch_sizes", torch::tensor(sizes, torch::kInt64));
  a.write("batch_rows", torch::tensor(flat, torch::kInt64));
  a.write("sampler_state", bytes_tensor(s.sampler_state));
  a.write("label_pool_rng", bytes_tensor(s.label_pool_rng));
  a.write("has_last_embeddings", scalar(s.last_embeddings.defined()));
  if (s.last_embeddings.defined()) a.write("last_embeddings", s.last_embeddings.to(torch::kCPU));
  a.write("cpu_rng", at::detail::getDefaultCPUGenerator().get_state());
}

TrainingState read_state(torch::serialize::InputArchive& a) {
  TrainingState s;
  torch::Tensor t;
  a.read("phase", t);
  s.stage = tensor_bytes(t);
  s.epoch = read_int(a, "epoch");
  s.batch_in_epoch = read_int(a, "batch_in_epoch");
  s.step = read_int(a, "step");
  // Older checkpoints were written only at a stage's start or inside the first stage.
  if (a.try_read("stage_start_step", t)) s.stage_start_step = t.item<std::int64_t>();
  else s.stage_start_step = s.epoch == 0 && s.batch_in_epoch == 0 ? s.step : 0;
  torch::Tensor sizes, rows;
  a.read("batch_sizes", sizes);
  a.read("batch_rows", rows);
  const auto* size = sizes.data_ptr<std::int64_t>();
  const auto* row = rows.data_ptr<std::int64_t>();
  std::int64_t at = 0;
  for (std::int64_t b = 0; b < sizes.numel(); ++b) {
    s.epoch_batches.emplace_back(row + at, row + at + size[b]);
    at += size[b];
  }
  a.read("sampler_state", t);
  s.sampler_state = tensor_bytes(t);
  // Before the label pools had their own stream they drew from the sampler's: such runs resume with the
  // label-pool stream seeded afresh.
  if (a.try_read("label_pool_rng", t)) s.label_pool_rng = tensor_bytes(t);
  if (read_int(a, "has_last_embeddings")) a.read("last_embeddings", s.last_embeddings);
  return s;
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, Method& method, torch::optim::Optimizer* optimizer, const TrainingState& state) {
  torch::serialize::OutputArchive archive;
  write_state(archive, state);
  torch::serialize::OutputArchive method_archive;
  method.save_state(method_archive);
  archive.write("method", method_archive);
  torch::serialize::OutputArchive model_archive;
  method.module().save(model_archive);
  archive.write("model", model_archive);
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive optimizer_archive;
    optimizer->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
  }
  archive.write("has_optimizer", scalar(optimizer != nullptr));
  std::filesystem::create_directories(path.parent_path());
  const auto temp = path.string() + ".tmp" + std::to_string(::getpid());
  try {
    archive.save_to(temp);
  } catch (const c10::Error& e) {
    std::filesystem::remove(temp);
    throw Error("cannot write checkpoint " + path.string() + ": " + e.what_without_backtrace());
  }
  std::filesystem::rename(temp, path);
}

TrainingState read_checkpoint_state(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) throw InputError(path.string(), "no such checkpoint");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path.string());
    return read_state(archive);
  } catch (const c10::Error& e) {
    throw InputError(path.string(), std::string("not a readable checkpoint: ") + e.what_without_backtrace());
  }
}

TrainingState load_checkpoint(const std::filesystem::path& path, Method& method, std::int64_t num_labels) {
  if (!std::filesystem::exists(path)) throw InputError(path.string(), "no such checkpoint");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path.string());
    TrainingState state = read_state(archive);
    torch::serialize::InputArchive method_archive;
    if (archive.try_read("method", method_archive)) method.load_state(method_archive, num_labels);
    else method.load_state(archive, num_labels);  // written before methods had their own state
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    method.module().load(model_archive);
    torch::Tensor rng;
    archive.read("cpu_rng", rng);
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle: shares the global state
    generator.set_state(rng);
    return state;
  } catch (const c10::Error& e) {
    throw InputError(path.string(), std::string("checkpoint does not match the model: ") + e.what_without_backtrace());
  }
}

bool load_optimizer_state(const std::filesystem::path& path, torch::optim::Optimizer& optimizer) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path.string());
    if (!read_int(archive, "has_optimizer")) return false;
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
    return true;
  } catch (const c10::Error& e) {
    throw InputError(path.string(), std::string("optimiser state does not match the model: ") + e.what_without_backtrace());
  }
}

}  // namespace xmc
