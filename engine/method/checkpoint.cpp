#include "engine/method/checkpoint.h"

#include <algorithm>

#include "engine/method/training_stages.h"

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "engine/core/archive_module_code.h"
#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/core/pickle_shape.h"
#include "engine/core/write_failure.h"
#include "engine/method/method_state.h"
#include "engine/model/random_state.h"
#include "engine/core/zip_integrity.h"

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
  a.write("identity_store", bytes_tensor(s.store_id));
  a.write("identity_run", scalar(s.run_id));
}

/// A 64-bit checksum of every parameter and buffer of `module` (names, shapes and bytes, in order), 8 bytes
/// at a time: a flipped byte in a checkpoint's tensor data changes it.
std::int64_t model_checksum(torch::nn::Module& module) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](std::uint64_t word) { h = (h ^ word) * 0x100000001b3ULL; };
  auto add = [&](const std::string& name, const torch::Tensor& value) {
    for (const char ch : name) mix(static_cast<unsigned char>(ch));
    for (const auto size : value.sizes()) mix(static_cast<std::uint64_t>(size));
    const torch::Tensor t = value.detach().to(torch::kCPU).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
    const std::size_t n = static_cast<std::size_t>(t.numel()) * t.element_size();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes + i, 8);
      mix(word);
    }
    for (; i < n; ++i) mix(bytes[i]);
  };
  for (const auto& p : module.named_parameters()) add(p.key(), p.value());
  for (const auto& b : module.named_buffers()) add(b.key(), b.value());
  return static_cast<std::int64_t>(h);
}

/// The device the module's parameters live on (the CPU for a module without any).
torch::Device module_device(torch::nn::Module& module) {
  for (const auto& p : module.parameters()) return p.device();
  return torch::kCPU;
}

std::string shape_text(c10::IntArrayRef sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

/// Every parameter and buffer the archive holds for `module` must have the model's shape: torch's loader
/// would otherwise replace the tensor with the saved one of another shape without a word.
void check_shapes(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& file, const std::string& prefix) {
  auto check = [&](const std::string& name, const torch::Tensor& own) {
    torch::Tensor saved;
    if (!archive.try_read(name, saved)) return;
    if (saved.sizes() != own.sizes())
      throw InputError(file, "it holds " + prefix + name + " of shape " + shape_text(saved.sizes()) + " where this run's model has " +
                                 shape_text(own.sizes()) + ": the checkpoint belongs to another run or configuration");
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) check(p.key(), p.value());
  for (const auto& b : module.named_buffers(/*recurse=*/false)) check(b.key(), b.value());
  for (const auto& child : module.named_children()) {
    torch::serialize::InputArchive child_archive;
    if (archive.try_read(child.key(), child_archive)) check_shapes(*child.value(), child_archive, file, prefix + child.key() + ".");
  }
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
  if (sizes.scalar_type() != torch::kInt64 || rows.scalar_type() != torch::kInt64 || sizes.dim() != 1 || rows.dim() != 1)
    throw std::runtime_error("its saved batches are not lists of int64 rows");
  sizes = sizes.contiguous();
  rows = rows.contiguous();
  const auto* size = sizes.data_ptr<std::int64_t>();
  const auto* row = rows.data_ptr<std::int64_t>();
  std::int64_t at = 0;
  for (std::int64_t b = 0; b < sizes.numel(); ++b) {
    if (size[b] < 0 || size[b] > rows.numel() - at) throw std::runtime_error("its saved batch sizes do not add up to its saved rows");
    s.epoch_batches.emplace_back(row + at, row + at + size[b]);
    at += size[b];
  }
  a.read("sampler_state", t);
  s.sampler_state = tensor_bytes(t);
  // Before the label pools had their own stream they drew from the sampler's: such runs resume with the
  // label-pool stream seeded afresh.
  if (a.try_read("label_pool_rng", t)) s.label_pool_rng = tensor_bytes(t);
  // Checkpoints before the clustering encoded the queries afresh also hold the last pass's query embeddings
  // ("last_embeddings"): left unread.
  if (a.try_read("identity_store", t)) s.store_id = tensor_bytes(t);
  if (a.try_read("identity_run", t)) s.run_id = t.item<std::int64_t>();
  return s;
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, MethodState& method, torch::optim::Optimizer* optimizer, const TrainingState& state) {
  torch::serialize::OutputArchive archive;
  write_state(archive, state);
  // Torch's generators: the CPU's, and a GPU's own (its dropout draws from it) when the model is there.
  const RandomState random = RandomState::of(module_device(method.module()));
  archive.write("cpu_rng", random.cpu_state());
  if (random.device_state().defined()) archive.write("device_rng", random.device_state());
  torch::serialize::OutputArchive method_archive;
  method.save_state(method_archive);
  archive.write("method", method_archive);
  torch::serialize::OutputArchive model_archive;
  method.module().save(model_archive);
  archive.write("model", model_archive);
  archive.write("model_checksum", scalar(model_checksum(method.module())));
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive optimizer_archive;
    optimizer->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
  }
  archive.write("has_optimizer", scalar(optimizer != nullptr));
  std::filesystem::create_directories(path.parent_path());
  const auto temp = unique_temp_path(path);
  // Written through our own writer: LibTorch's file writer, when a write fails (a full disk, a file-size
  // limit), throws from its destructor during the unwinding and the process aborts. Here a failed write is
  // remembered, the rest of the archive is swallowed, and the error names the file and the cause.
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(temp.string(), std::string("cannot create the checkpoint's temporary file: ") + std::strerror(errno));
  int write_error = 0;
  std::uintmax_t archive_bytes = 0;  // the whole archive's size, written or not: what the disk would have to hold
  const auto write_all = [&](const void* data, std::size_t size) -> std::size_t {
    archive_bytes += size;
    const auto* bytes = static_cast<const char*>(data);
    for (std::size_t done = 0; write_error == 0 && done < size;) {
      const ssize_t n = ::write(fd, bytes + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) write_error = n < 0 ? errno : EIO;
      else done += static_cast<std::size_t>(n);
    }
    return size;  // the archive's bookkeeping stays consistent; the failure is reported after it
  };
  try {
    archive.save_to(write_all);
  } catch (const c10::Error& e) {
    ::close(fd);
    std::error_code ec;
    std::filesystem::remove(temp, ec);
    throw Error("cannot write checkpoint " + path.string() + ": " + e.what_without_backtrace());
  }
  if (::close(fd) != 0 && write_error == 0) write_error = errno;
  if (write_error != 0) {
    std::error_code ec;
    std::filesystem::remove(temp, ec);  // first: the free space below is what the disk has without it
    throw InputError(path.string(), "cannot write the checkpoint: " + why_write_failed(path, archive_bytes, write_error) +
                                        " (the previous checkpoint, if any, is kept)");
  }
  durable_rename(temp, path);
}

namespace {

/// What LibTorch said when it could not read an archive, without its backtrace and in at most two lines: the
/// TorchScript compiler (torch::jit::ErrorReport, not a c10::Error) reports damaged module code with a quote of it.
std::string torch_said(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  std::string out;
  std::size_t lines = 0, start = 0;
  while (start < text.size() && lines < 2) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    out += (lines++ ? " " : "") + line.substr(line.find_first_not_of(" \t"));
  }
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) c = '?';  // damaged bytes, quoted
  return out;
}

}  // namespace

void check_torch_archive(const std::filesystem::path& path) {
  const auto is_pickle = [](const std::string& entry) { return entry.size() >= 3 && entry.compare(entry.size() - 3, 3, "pkl") == 0; };
  std::vector<std::pair<std::string, std::string>> kept, code;
  std::map<std::string, std::uint64_t> sizes;
  // Every byte against its CRC-32 (LibTorch's reader checks none), keeping what LibTorch would parse.
  verify_zip_entries(path, [&](const std::string& entry) { return is_archive_module_code(entry) || is_pickle(entry); }, kept, &sizes);
  for (auto& [entry, bytes] : kept) {
    if (!is_pickle(entry)) {
      code.emplace_back(std::move(entry), std::move(bytes));
      continue;
    }
    // Its unpickler trusts the stack, and reads a storage as numel elements whatever its record holds.
    const std::string folder = entry.substr(0, entry.size() - 4) + "/";  // archive/data.pkl's storages are archive/data/<key>
    for (const PickledStorage& storage : check_pickle_shape(path.string(), entry, bytes)) {
      const auto record = sizes.find(folder + storage.key);
      if (record == sizes.end()) throw InputError(path.string(), "is damaged: " + entry + " names storage " + storage.key + ", which the archive lacks");
      if (storage.numel > record->second / storage.element_bytes())
        throw InputError(path.string(), "is damaged: " + entry + " reads storage " + storage.key + " as " + std::to_string(storage.numel) + " " + storage.type +
                                            " elements, but its record holds " + std::to_string(record->second) + " bytes");
    }
  }
  check_archive_module_code(path.string(), code);  // the code it would compile: declarations only
}

TrainingState read_checkpoint_state(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) throw InputError(path.string(), "no such checkpoint");
  check_torch_archive(path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path.string());
    return read_state(archive);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path.string(), "not a readable checkpoint: " + torch_said(e));
  }
}

TrainingState load_checkpoint(const std::filesystem::path& path, MethodState& method, std::int64_t num_labels, const std::string& store_id,
                              std::int64_t run_id, std::optional<torch::serialize::InputArchive>* saved_optimizer) {
  if (!std::filesystem::exists(path)) throw InputError(path.string(), "no such checkpoint");
  check_torch_archive(path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path.string());
  } catch (const std::exception& e) {  // the archive's structure or its modules' code: damage the CRCs could not see
    throw InputError(path.string(), "not a readable checkpoint: " + torch_said(e));
  }
  try {
    TrainingState state;
    try {
      state = read_state(archive);
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const c10::Error*>(&e) != nullptr) throw;
      throw InputError(path.string(), std::string(e.what()) + ": the checkpoint is damaged");
    }
    if (!store_id.empty() && !state.store_id.empty() && (state.store_id != store_id || state.run_id != run_id))
      throw InputError(path.string(), "this checkpoint is run " + std::to_string(state.run_id) + "'s of store " + state.store_id + ", not run " +
                                          std::to_string(run_id) + "'s of store " + store_id + ": it is never loaded for another run");
    torch::serialize::InputArchive method_archive;
    if (archive.try_read("method", method_archive)) method.load_state(method_archive, num_labels);
    else method.load_state(archive, num_labels);  // written before methods had their own state
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    check_shapes(method.module(), model_archive, path.string(), "");
    method.module().load(model_archive);
    torch::Tensor checksum;
    if (archive.try_read("model_checksum", checksum) && checksum.item<std::int64_t>() != model_checksum(method.module()))
      throw InputError(path.string(), "its model tensors do not match the checksum saved with them: the checkpoint is damaged");
    // A GPU generator's state is put back only on the same kind of device: a run resumed on the CPU, or from a
    // checkpoint written before it was saved, continues the GPU's stream as it stands.
    torch::Tensor cpu_rng, device_rng;
    archive.read("cpu_rng", cpu_rng);
    const torch::Device device = module_device(method.module());
    if (device.is_cpu() || !archive.try_read("device_rng", device_rng)) device_rng = torch::Tensor();
    RandomState(device, cpu_rng, device_rng).restore();
    if (saved_optimizer != nullptr) {
      // The optimiser's part alone outlives `archive`: the model's and the method's tensors are freed with it.
      saved_optimizer->reset();
      if (read_int(archive, "has_optimizer")) {
        torch::serialize::InputArchive optimizer_archive;
        archive.read("optimizer", optimizer_archive);
        *saved_optimizer = std::move(optimizer_archive);
      }
    }
    return state;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path.string(), "checkpoint does not match the model: " + torch_said(e));
  }
}

bool load_optimizer_state(const std::filesystem::path& path, torch::optim::Optimizer& optimizer) {
  check_torch_archive(path);
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path.string());
    if (!read_int(archive, "has_optimizer")) return false;
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    load_optimizer_state(optimizer_archive, path, optimizer);
    return true;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path.string(), "optimiser state does not match the model: " + torch_said(e));
  }
}

void load_optimizer_state(torch::serialize::InputArchive& saved, const std::filesystem::path& path, torch::optim::Optimizer& optimizer) {
  try {
    optimizer.load(saved);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path.string(), "optimiser state does not match the model: " + torch_said(e));
  }
}

std::string random_stream_text(const std::mt19937_64& stream) {
  std::ostringstream text;
  text << stream;
  return text.str();
}

void read_random_stream(const std::string& text, std::mt19937_64& stream, const std::filesystem::path& file) {
  std::istringstream in(text);
  in >> stream;
  if (!in) throw InputError(file.string(), "the label-pool random state does not parse");
}

void check_resumable(const TrainingState& s, const std::vector<StageSpec>& stages, std::int64_t training_rows, bool batches_are_rows,
                     const std::string& method_name, const std::filesystem::path& file) {
  const auto saved_stage = std::find_if(stages.begin(), stages.end(), [&](const StageSpec& stage) { return stage.name == s.stage; });
  if (batches_are_rows)
    for (const auto& batch : s.epoch_batches)
      for (const std::int64_t row : batch)
        if (row < 0 || row >= training_rows)
          throw InputError(file.string(), "its saved batches name training row " + std::to_string(row) + ", but the dataset has " +
                                              std::to_string(training_rows) + " training rows: the checkpoint belongs to another run or is damaged");
  if (!s.stage.empty() && s.stage != kAllStagesDone && saved_stage == stages.end())
    throw InputError(file.string(), "its stage \"" + s.stage + "\" is not a stage of method " + method_name);
}

}  // namespace xmc
