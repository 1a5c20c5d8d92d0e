// XC sparse matrix files (trn_X_Y.txt, trn_X_Xf.txt): header "N L", then "index:value" rows.
#include "engine/data/xc_sparse_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("trn_X_Y.txt", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::read_xc_sparse(path); });
  return 0;
}
