#pragma once
// Sparse feature matrices on disk in a compact binary form (tf-idf features of a dataset: `xmc dataset featurize`).
//
// Layout, little-endian: the 8 bytes "XMCCSR1\n"; int64 rows, cols, nnz; int64 indptr[rows + 1]; int32 indices[nnz];
// float32 values[nnz]; uint32 CRC-32 of every byte before it. 12 bytes a non-zero, against ~16 for "col:value" text.
// The reader checks everything a damaged or foreign file could get wrong and names the file and what is wrong.
#include <filesystem>

#include "engine/data/csr_matrix.h"

namespace xmc {

/// Writes `m` atomically. Throws Error when `m` is not a well-formed CSR matrix (the reader would refuse it).
void write_csr_file(const std::filesystem::path& path, const CsrMatrix& m);

/// Reads a file written by write_csr_file(); InputError naming the file for anything malformed: magic, sizes
/// that disagree with the file's length, offsets that decrease, columns out of range or not ascending in a row,
/// values that are not finite, a checksum that does not match.
CsrMatrix read_csr_file(const std::filesystem::path& path);

}  // namespace xmc
