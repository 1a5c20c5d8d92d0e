#pragma once
// A feature bank of image embeddings (ViXML): for each item of a split (a query or a label) up to M embeddings of
// dimension m, made once by a frozen vision model. Plain C++. On disk a NumPy .npy array [rows, M, m] (or
// [rows, m] for one image per item), float32 or float16, C order, memory-mapped rather than read, so a bank
// of millions of items costs page cache, not heap; beside it an optional int32 (or int64) [rows] array of how
// many of the M slots hold real images (absent: all M).
// A slot is an image when it is below its row's count and its vector is not all zeros: banks pad items with
// fewer images with zero vectors, and such padding must never reach a model.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace xmc {

class ImageBank {
 public:
  enum class Precision { float32, float16 };

  /// Opens `bank` (and `counts` when that file exists). Throws InputError naming the file for a bad header,
  /// an element type other than '<f4'/'<f2', a shape that is not [rows, M, m] or [rows, m], a length that does
  /// not match the header (truncated), a value that is not finite (naming its row and slot), or a count outside
  /// 0..M or a count file of another row count.
  static ImageBank open(const std::filesystem::path& bank, const std::filesystem::path& counts = {});
  /// A bank held in memory: `values` [rows × slots × dim] float32; `counts` empty = all slots.
  static ImageBank from_values(std::int64_t rows, std::int64_t slots, std::int64_t dim, std::vector<float> values,
                               std::vector<std::int32_t> counts = {});

  std::int64_t rows() const { return rows_; }
  std::int64_t slots() const { return slots_; }  ///< M
  std::int64_t dim() const { return dim_; }      ///< m
  Precision precision() const { return precision_; }
  const std::filesystem::path& source() const { return source_; }  ///< the bank file; empty for one in memory
  bool has_counts() const { return !counts_.empty(); }

  /// The slots of `row` that hold images, in order, at most `limit` of them.
  std::vector<std::int64_t> image_slots(std::int64_t row, std::int64_t limit) const;
  /// Copies the embedding in (row, slot) to `out` (dim() floats), converting float16.
  void copy_image(std::int64_t row, std::int64_t slot, float* out) const;
  /// The count file's value for `row` (slots() without one).
  std::int64_t listed_count(std::int64_t row) const;

  /// Rows `rows` of this bank, in that order, as a bank in memory (float32).
  ImageBank subset(std::span<const std::int64_t> rows) const;
  /// Rows [begin, end) as a view of this bank's values (no copy; it keeps them alive). ConfigError outside it.
  ImageBank rows_between(std::int64_t begin, std::int64_t end) const;
  /// Writes the bank to `bank` (float32 '<f4', [rows, M, m]) and, when it has counts, `counts` ('<i4' [rows]);
  /// without counts an old `counts` file is removed, so the pair always agrees. Atomic per file.
  void save(const std::filesystem::path& bank, const std::filesystem::path& counts) const;

 private:
  ImageBank() = default;
  bool blank(std::int64_t row, std::int64_t slot) const;

  std::int64_t rows_ = 0, slots_ = 0, dim_ = 0;
  Precision precision_ = Precision::float32;
  std::filesystem::path source_;
  std::shared_ptr<const void> storage_;  ///< the mapping or the vector the values live in
  const std::byte* values_ = nullptr;
  std::vector<std::int32_t> counts_;
};

/// How much of a split a bank covers.
struct ImageCoverage {
  std::int64_t rows = 0;             ///< items in the split
  std::int64_t rows_with_images = 0; ///< items with at least one image
  std::int64_t images = 0;           ///< images over all items
  std::int64_t slots = 0, dim = 0;   ///< M and m
};
ImageCoverage image_coverage(const ImageBank& bank);

/// The bank files of a dataset folder: images/trn.npy, images/tst.npy, images/lbl.npy and their
/// images/<split>_count.npy.
namespace image_files {
inline constexpr const char* kFolder = "images";
inline constexpr const char* kSplits[3] = {"trn", "tst", "lbl"};
std::filesystem::path bank(const std::filesystem::path& dataset, const std::string& split);
std::filesystem::path counts(const std::filesystem::path& dataset, const std::string& split);
/// images/<split>_files.txt: one line per item, its image files tab-separated (what `xmc images embed` read).
std::filesystem::path file_list(const std::filesystem::path& dataset, const std::string& split);
}  // namespace image_files

/// m, the embedding size of a dataset's banks, read from the first bank file's header; 0 when the folder
/// has none. Throws InputError for a bank whose header does not read.
std::int64_t dataset_image_dim(const std::filesystem::path& dataset);

}  // namespace xmc
