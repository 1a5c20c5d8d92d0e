#include "engine/method/epoch_query_encodings.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/float_row_file.h"

namespace xmc {
namespace {

constexpr std::int64_t kChunkRows = 1024;

std::string gigabytes(std::uintmax_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

std::string not_kept_message(const std::string& why) {
  return "training queries' encodings not kept for the shortlist refresh (" + why + "): the refresh encodes them again";
}

/// Why `bytes` cannot be kept in the temporary folder (set into `folder`), or "" when they can.
std::string why_not_kept(std::uintmax_t bytes, std::filesystem::path& folder) {
  std::error_code error;
  folder = std::filesystem::temp_directory_path(error);
  if (error) {
    const char* tmpdir = std::getenv("TMPDIR");
    return tmpdir != nullptr ? "TMPDIR " + std::string(tmpdir) + " is not a folder" : "no temporary folder: " + error.message();
  }
  const std::filesystem::space_info space = std::filesystem::space(folder, error);
  if (error) return "cannot see the free space of " + folder.string() + ": " + error.message();
  // Room for the file and 1 GB besides, so that the run's checkpoints still fit where they share the disk.
  if (space.available < bytes + (std::uintmax_t{1} << 30))
    return gigabytes(bytes) + " needed and 1 GB to spare, " + gigabytes(space.available) + " free in " + folder.string();
  return "";
}

/// A file for `rows` float32 rows of `width` in the temporary folder, or null when there is none (the log says why).
std::unique_ptr<FloatRowFile> file_for(std::int64_t rows, std::int64_t width, TrainContext& context) {
  std::filesystem::path folder;
  const std::string why = why_not_kept(static_cast<std::uintmax_t>(rows) * static_cast<std::uintmax_t>(width) * sizeof(float), folder);
  if (!why.empty()) {
    context.phase(not_kept_message(why));
    return nullptr;
  }
  try {
    return std::make_unique<FloatRowFile>(folder, width);
  } catch (const Error& e) {
    context.phase(not_kept_message(e.what()));
    return nullptr;
  }
}

}  // namespace

EpochQueryEncodings::EpochQueryEncodings(std::int64_t count, const Encoder& encode, bool keep_for_refresh, TrainContext& context)
    : count_(count) {
  if (count == 0) {
    for_clustering_ = encode(0, 0).detach().to(kClusteringEmbeddingType);
    return;
  }
  // On a GPU the encoder is fast enough that reading 4·d bytes a query back from the disk would not pay.
  const bool keep = keep_for_refresh && context.device.is_cpu();
  context.progress.start("encoding training queries for clustering", count);
  for (std::int64_t begin = 0; begin < count; begin += kChunkRows) {
    const std::int64_t end = std::min(count, begin + kChunkRows);
    const torch::Tensor part = encode(begin, end).detach();
    if (!for_clustering_.defined()) {  // the first chunk gives the width
      for_clustering_ = torch::empty({count, part.size(1)}, part.options().dtype(kClusteringEmbeddingType));
      if (keep) kept_ = file_for(count, part.size(1), context);
    }
    for_clustering_.narrow(0, begin, end - begin).copy_(part);
    if (kept_) {
      const torch::Tensor rows = part.to(torch::kCPU, torch::kFloat).contiguous();
      try {
        kept_->append(rows.data_ptr<float>(), rows.size(0));
      } catch (const Error& e) {
        context.phase(not_kept_message(e.what()));
        kept_.reset();
      }
    }
    context.progress.update(end);
  }
  context.progress.finish();
  if (kept_)
    context.phase("training queries' float32 encodings kept for the shortlist refresh (" +
                  gigabytes(static_cast<std::uintmax_t>(kept_->rows() * kept_->width()) * sizeof(float)) + ", an unnamed file in " +
                  kept_->directory().string() + ")");
}

EpochQueryEncodings::~EpochQueryEncodings() = default;

RowEmbeddings EpochQueryEncodings::for_refresh(const Encoder& encode) const {
  if (!kept_) return RowEmbeddings{.count = count_, .embed = encode};
  const FloatRowFile* file = kept_.get();
  return RowEmbeddings{.count = count_, .embed = [file](std::int64_t begin, std::int64_t end) {
                         torch::Tensor rows = torch::empty({end - begin, file->width()});
                         file->read(begin, end, rows.data_ptr<float>());
                         return rows;
                       }};
}

}  // namespace xmc
