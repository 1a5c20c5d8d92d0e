#pragma once
// PIFA (positive instance feature aggregation, PECOS): a label's vector is the normalised sum of the
// (L2-normalised) feature rows of its training queries. Labels with no training query get an empty row.
#include "engine/data/csr_matrix.h"

namespace xmc {

/// [L x F] label vectors from `labels` ([N x L], training queries' labels) and `features` ([N x F]).
/// Throws Error when the row counts differ.
CsrMatrix pifa_label_vectors(const CsrMatrix& labels, const CsrMatrix& features);

}  // namespace xmc
