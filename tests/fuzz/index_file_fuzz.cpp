// A saved index file (engine/index/index_file.h): its header is parsed and checked against the file, the payload's
// CRC-32 against the header, and only then is the payload handed to a reader (here one that takes the bytes as
// dim x ntotal floats, as the exact index stores them). A file that passes must hold what its header says.
#include <cstdlib>
#include <istream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engine/index/index_file.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

/// Vectors read back as they were written: dim x ntotal float32.
class FlatVectors final : public xmc::Index {
 public:
  explicit FlatVectors(std::int64_t dim) : Index(dim) {}
  void add(std::int64_t n, const float* x) override {
    values_.insert(values_.end(), x, x + n * dim_);
    ntotal_ += n;
  }
  void search(std::int64_t, const float*, std::int64_t, float*, std::int64_t*) const override {}
  void reset() override {
    values_.clear();
    ntotal_ = 0;
  }
  void write(std::ostream& out) const override {
    out.write(reinterpret_cast<const char*>(values_.data()), static_cast<std::streamsize>(values_.size() * sizeof(float)));
  }

 private:
  std::vector<float> values_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("labels.index", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] {
    const auto index = xmc::read_index_file(path, [](std::istream& payload, const xmc::IndexFileHeader& header) {
      if (header.dim <= 0 || header.ntotal < 0 || header.dim > (1 << 20) ||
          header.payload_bytes / sizeof(float) / static_cast<std::uint64_t>(header.dim) != static_cast<std::uint64_t>(header.ntotal) ||
          header.payload_bytes % (sizeof(float) * static_cast<std::uint64_t>(header.dim)) != 0)
        throw std::runtime_error("not a flat float32 payload");
      auto vectors = std::make_unique<FlatVectors>(header.dim);
      std::vector<float> row(static_cast<std::size_t>(header.dim));
      for (std::int64_t r = 0; r < header.ntotal; ++r) {
        payload.read(reinterpret_cast<char*>(row.data()), static_cast<std::streamsize>(row.size() * sizeof(float)));
        if (!payload) throw std::runtime_error("short payload");
        vectors->add(1, row.data());
      }
      return vectors;
    });
    if (index->dim() <= 0 || index->ntotal() < 0) std::abort();
  });
  return 0;
}
