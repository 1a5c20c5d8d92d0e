#pragma once
// A corpus of texts turned into token ids once, up front; encoders build their batch tensors from rows
// of it (and, with image banks, their images). Rows are stored back to back (CSR): tokens of text i are token_ids[offsets[i] .. offsets[i+1]).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace xmc {

class ImageBank;
struct CsrMatrix;

struct TokenizedCorpus {
  std::vector<std::int64_t> offsets{0};  ///< size num_texts + 1
  std::vector<std::int32_t> token_ids;   ///< all tokens, text after text
  /// The texts' image feature bank, row for row (engine/data/image_bank.h); null = texts only. Encoders with
  /// image fusion read a row's images from it; rows appended later have none in it and must not be encoded.
  std::shared_ptr<const ImageBank> images;
  /// The texts' given sparse features (the dataset's trn/tst_X_Xf.txt rows), row for row; null = none. A method
  /// that ranks by them (xrlinear.features: given) reads them where a corpus has them, its texts where not.
  std::shared_ptr<const CsrMatrix> features;

  std::int64_t size() const { return static_cast<std::int64_t>(offsets.size()) - 1; }
  std::span<const std::int32_t> tokens(std::int64_t text) const {
    return {token_ids.data() + offsets[static_cast<std::size_t>(text)],
            static_cast<std::size_t>(offsets[static_cast<std::size_t>(text) + 1] - offsets[static_cast<std::size_t>(text)])};
  }
  void append(std::span<const std::int32_t> tokens) {
    token_ids.insert(token_ids.end(), tokens.begin(), tokens.end());
    offsets.push_back(static_cast<std::int64_t>(token_ids.size()));
  }
};

}  // namespace xmc
