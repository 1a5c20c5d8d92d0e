#pragma once
// Pretrained word vectors in the GloVe text format ("word v1 ... vd" per line), looked up for a
// vocabulary to initialise the bag-of-words encoder.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xmc {

struct WordVectorTable {
  std::int64_t dim = 0;
  std::vector<float> vectors;  ///< [words.size() x dim], row-major; rows of missing words are zero
  std::vector<bool> found;     ///< whether each word had a vector
  std::int64_t num_found = 0;
};

/// Reads `path` and keeps the vectors of `words` (exact match, then lower-cased match). Lines must all
/// have the same dimension; a malformed line is an InputError with its line number.
WordVectorTable load_glove_vectors(const std::filesystem::path& path, const std::vector<std::string>& words);

}  // namespace xmc
