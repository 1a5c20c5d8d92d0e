#include "engine/rank/saved_label_index.h"

#include <cctype>

#include "engine/core/error.h"
#include "engine/index/index_factory.h"

namespace xmc {
namespace {

/// A file name part for an index spec: "faiss:IVF256,Flat" -> "faiss-IVF256-Flat".
std::string file_safe(const std::string& spec) {
  std::string out;
  for (char c : spec) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-';
  return out;
}

}  // namespace

std::unique_ptr<Index> saved_label_index(const std::string& spec, const torch::Tensor& label_matrix, const std::string& mode,
                                         const std::filesystem::path& run_dir, std::filesystem::file_time_type checkpoint_time, Progress& progress) {
  const torch::Tensor matrix = label_matrix.to(torch::kCPU, torch::kFloat32).contiguous();
  const auto saved = run_dir / ("index-" + mode + "-" + file_safe(spec) + ".bin");
  std::unique_ptr<Index> index;
  if (std::filesystem::exists(saved) && std::filesystem::last_write_time(saved) > checkpoint_time) {
    try {
      if (read_saved_index_info(saved).spec == spec) index = load_index(saved);
    } catch (const InputError&) {
      index.reset();  // damaged: rebuilt and saved again below
    }
    if (index && (index->ntotal() != matrix.size(0) || index->dim() != matrix.size(1))) index.reset();
  }
  if (index) return index;
  progress.start("search index: " + spec + " over " + mode, 1);
  index = make_index(spec, matrix.size(1));
  index->add(matrix.size(0), matrix.data_ptr<float>());
  progress.update(1);
  progress.finish();
  try {
    save_index(*index, spec, saved);
  } catch (const Error&) {
    // A store folder we may not write to: the index serves this session and is built again next time.
  }
  return index;
}

}  // namespace xmc
