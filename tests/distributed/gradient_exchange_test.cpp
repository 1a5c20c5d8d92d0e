// A data-parallel step's exchange after backward (ranks as threads of one process): dense gradients and
// embedding tables' touched rows summed over the ranks, every rank left with the same gradients; a table
// touched densely on one rank goes dense everywhere; the stop and pause requests and the ranks' losses agreed
// in the same exchange.
#include <gtest/gtest.h>

#include <mutex>

#include "engine/distributed/gradient_exchange.h"
#include "tests/distributed/rank_threads.h"

namespace xmc {
namespace {

constexpr std::int64_t kTableRows = 2048;
constexpr std::int64_t kTableColumns = 4;

/// Rank r's gradient row for table row `row`: distinct values per rank and row.
torch::Tensor row_values(int rank, std::int64_t row) {
  return torch::arange(kTableColumns, torch::kDouble) + 10.0 * static_cast<double>(row) + 0.5 * rank;
}

/// The rows of the table each rank's step touched: rank 1 overlaps rank 0 at row 100, rank 2 touches none.
std::vector<std::int64_t> touched_rows(int rank) {
  if (rank == 0) return {5, 100};
  if (rank == 1) return {2000, 100};  // out of order: a sparse gradient as index_select's backward leaves it
  return {};
}

struct Parameters {
  torch::Tensor table = torch::zeros({kTableRows, kTableColumns}, torch::kDouble);
  torch::Tensor weight = torch::zeros({3, 4}, torch::kDouble);
  torch::Tensor bias = torch::zeros({3}, torch::kDouble);
  torch::Tensor scale = torch::zeros({2}, torch::kFloat);  // another dtype: a bucket of its own
  std::vector<torch::Tensor> all() const { return {table, weight, bias, scale}; }
};

torch::Tensor weight_gradient(int rank) { return torch::arange(12, torch::kDouble).reshape({3, 4}) * (rank + 1); }
torch::Tensor bias_gradient(int rank) { return torch::full({3}, 0.25 * (rank + 1), torch::kDouble); }

/// Rank r's gradients: the table's as a sparse tensor on rank 1, as a dense one (zero outside its rows) on the
/// others; no bias gradient on rank 1 (a parameter its step did not reach).
void set_gradients(const Parameters& p, int rank) {
  const std::vector<std::int64_t> rows = touched_rows(rank);
  std::vector<torch::Tensor> values;
  for (const auto row : rows) values.push_back(row_values(rank, row));
  if (rank == 1) {
    p.table.mutable_grad() = torch::sparse_coo_tensor(torch::tensor(rows, torch::kInt64).unsqueeze(0), torch::stack(values),
                                                      {kTableRows, kTableColumns});
  } else {
    torch::Tensor dense = torch::zeros({kTableRows, kTableColumns}, torch::kDouble);
    for (std::size_t i = 0; i < rows.size(); ++i) dense[rows[i]] = values[i];
    p.table.mutable_grad() = dense;
  }
  p.weight.mutable_grad() = weight_gradient(rank);
  if (rank != 1) p.bias.mutable_grad() = bias_gradient(rank);
  p.scale.mutable_grad() = torch::tensor({1.0f + static_cast<float>(rank), 2.0f * static_cast<float>(rank)});
}

struct RankResult {
  std::vector<torch::Tensor> gradients;  ///< dense copies
  bool table_sparse = false;
  StepAgreement agreement;
};

std::vector<RankResult> exchange(int world, bool average, const std::vector<double>& losses, int stopping_rank, int pausing_rank) {
  std::vector<RankResult> results(static_cast<std::size_t>(world));
  std::mutex mutex;
  test::run_ranks(world, [&](Communicator& c) {
    const Parameters p;
    set_gradients(p, c.rank());
    const StepAgreement agreed = reduce_gradients(c, p.all(), average, {c.rank() == stopping_rank, c.rank() == pausing_rank}, nullptr,
                                                  losses[static_cast<std::size_t>(c.rank())]);
    const std::lock_guard lock(mutex);
    RankResult& r = results[static_cast<std::size_t>(c.rank())];
    r.agreement = agreed;
    r.table_sparse = p.table.grad().is_sparse();
    for (const auto& t : p.all()) r.gradients.push_back(t.grad().is_sparse() ? t.grad().to_dense() : t.grad().clone());
  });
  return results;
}

TEST(GradientExchange, SumsTablesByTheirRowsAndDenseGradientsAndAgreesOnFlagsAndLoss) {
  const int world = 3;
  // The sums, added up rank by rank: table rows 5 (rank 0), 100 (ranks 0 and 1), 2000 (rank 1).
  torch::Tensor table = torch::zeros({kTableRows, kTableColumns}, torch::kDouble);
  table[5] = row_values(0, 5);
  table[100] = row_values(0, 100) + row_values(1, 100);
  table[2000] = row_values(1, 2000);
  const torch::Tensor weight = weight_gradient(0) + weight_gradient(1) + weight_gradient(2);  // 6 × arange
  const torch::Tensor bias = bias_gradient(0) + bias_gradient(2);                              // 0.25 + 0.75
  ASSERT_TRUE(torch::equal(weight, torch::arange(12, torch::kDouble).reshape({3, 4}) * 6));
  ASSERT_TRUE(torch::equal(bias, torch::full({3}, 1.0, torch::kDouble)));

  for (const bool average : {false, true}) {
    SCOPED_TRACE(average ? "averaged" : "summed");
    const double scale = average ? 1.0 / world : 1.0;
    const auto results = exchange(world, average, {1.5, 2.25, -0.5}, /*stopping_rank=*/1, /*pausing_rank=*/-1);
    for (int r = 0; r < world; ++r) {
      const RankResult& got = results[static_cast<std::size_t>(r)];
      EXPECT_TRUE(got.table_sparse) << "rank " << r << ": few rows touched, the table's gradient stays row-sparse";
      EXPECT_TRUE(torch::allclose(got.gradients[0], table * scale, 0, 1e-12)) << "rank " << r;
      EXPECT_TRUE(torch::allclose(got.gradients[1], weight * scale, 0, 1e-12)) << "rank " << r;
      EXPECT_TRUE(torch::allclose(got.gradients[2], bias * scale, 0, 1e-12)) << "rank " << r;
      // [1 + r, 2r] summed over ranks 0-2: [6, 6].
      EXPECT_TRUE(torch::allclose(got.gradients[3], torch::full({2}, 6.0f) * static_cast<float>(scale), 0, 1e-6)) << "rank " << r;
      EXPECT_TRUE(got.agreement.stop) << "rank 1 asked to stop: every rank stops";
      EXPECT_FALSE(got.agreement.pause);
      EXPECT_FALSE(got.agreement.late_gradients);
      EXPECT_DOUBLE_EQ(got.agreement.loss_sum, 3.25) << "rank " << r;
    }
  }
}

TEST(GradientExchange, ATableTouchedDenselyOnOneRankGoesDenseOnEvery) {
  // Rank 0 touches 600 of the 2048 rows (over a quarter): every rank sums the table densely; rank 1 raises pause.
  const int world = 2;
  const torch::Tensor wide = torch::zeros({kTableRows, kTableColumns}, torch::kDouble);
  wide.narrow(0, 0, 600).fill_(1.0);
  std::vector<RankResult> results(world);
  std::mutex mutex;
  test::run_ranks(world, [&](Communicator& c) {
    const Parameters p;
    set_gradients(p, c.rank());
    if (c.rank() == 0) p.table.mutable_grad() = wide.clone();
    const StepAgreement agreed = reduce_gradients(c, p.all(), /*average=*/false, {false, c.rank() == 1}, nullptr);
    const std::lock_guard lock(mutex);
    RankResult& r = results[static_cast<std::size_t>(c.rank())];
    r.agreement = agreed;
    r.table_sparse = p.table.grad().is_sparse();
    r.gradients.push_back(p.table.grad().is_sparse() ? p.table.grad().to_dense() : p.table.grad().clone());
  });
  torch::Tensor table = wide.clone();
  table[100] += row_values(1, 100);
  table[2000] += row_values(1, 2000);
  for (int r = 0; r < world; ++r) {
    const RankResult& got = results[static_cast<std::size_t>(r)];
    EXPECT_FALSE(got.table_sparse) << "rank " << r;
    EXPECT_TRUE(torch::allclose(got.gradients[0], table, 0, 1e-12)) << "rank " << r;
    EXPECT_TRUE(got.agreement.pause) << "rank " << r;
    EXPECT_FALSE(got.agreement.stop) << "rank " << r;
    EXPECT_DOUBLE_EQ(got.agreement.loss_sum, 0.0) << "rank " << r;
  }
}

}  // namespace
}  // namespace xmc
