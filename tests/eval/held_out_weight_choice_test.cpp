#include "engine/eval/held_out_weight_choice.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/core/error.h"

namespace xmc {
namespace {

// Hand-worked: truth {7, 9}; ranking 7, 1, 9, 2, 3 hits at ranks 1 and 3: P@1 = 1, P@3 = 2/3, P@5 = 2/5.
TEST(HeldOutWeightChoice, PrecisionOneThreeFiveOfOneRanking) {
  const std::vector<std::int32_t> truth{7, 9};
  EXPECT_DOUBLE_EQ(precision_1_3_5(std::vector<std::int64_t>{7, 1, 9, 2, 3}, truth), 1.0 + 2.0 / 3.0 + 2.0 / 5.0);
  // A shorter ranking counts its missing ranks as misses; ranks past 5 do not count.
  EXPECT_DOUBLE_EQ(precision_1_3_5(std::vector<std::int64_t>{1, 9}, truth), 0.0 + 1.0 / 3.0 + 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(precision_1_3_5(std::vector<std::int64_t>{1, 2, 3, 4, 5, 7, 9}, truth), 0.0);
  EXPECT_DOUBLE_EQ(precision_1_3_5(std::vector<std::int64_t>{}, truth), 0.0);
}

// Two queries over three weights: means per weight, the best, ties to the weight nearest the preferred one, and
// the curve as the run's log prints it.
TEST(HeldOutWeightChoice, MeansTheBestAndTiesNearestThePreferredWeight) {
  HeldOutWeightChoice choice({0.0, 0.5, 1.0});
  EXPECT_EQ(choice.scores(), (std::vector<double>{0, 0, 0})) << "no queries yet";
  choice.add_score(0, 1.0);
  choice.add_score(1, 1.5);
  choice.add_score(2, 1.5);
  choice.add_score(0, 0.5);
  choice.add_score(1, 0.5);
  choice.add_score(2, 0.5);
  choice.add_queries(2);
  EXPECT_EQ(choice.queries(), 2);
  EXPECT_EQ(choice.scores(), (std::vector<double>{0.75, 1.0, 1.0}));
  EXPECT_EQ(choice.best(0.9), 1.0) << "0.5 and 1 tie; 1 is nearer 0.9";
  EXPECT_EQ(choice.best(0.6), 0.5) << "0.5 and 1 tie; 0.5 is nearer 0.6";
  EXPECT_EQ(choice.curve(1), "0.0: 0.7500, 0.5: 1.0000, 1.0: 1.0000");
  EXPECT_EQ(choice.curve(2), "0.00: 0.7500, 0.50: 1.0000, 1.00: 1.0000");
  EXPECT_THROW(HeldOutWeightChoice({}), Error);
  EXPECT_THROW(HeldOutWeightChoice({0.5, 1.5}), Error);
}

// Differences (1, −1, 1, 0): mean 0.25, sample sd √(2.75 / 3) = 0.9574, standard error 0.9574 / 2 = 0.4787 > 0.25.
// Differences (1, 1, 1, 1): mean 1, sd 0. Differences (0.6, 0.4, 0.5, 0.5): mean 0.5, sd 0.0816, error 0.0408.
TEST(HeldOutWeightChoice, AnotherValueNeedsToBeatTheConfiguredOneByAStandardError) {
  EXPECT_FALSE(beats_by_a_standard_error(std::vector<double>{1, 0, 1, 0}, std::vector<double>{0, 1, 0, 0})) << "ahead by less than its noise";
  EXPECT_TRUE(beats_by_a_standard_error(std::vector<double>{1, 1, 1, 1}, std::vector<double>{0, 0, 0, 0}));
  EXPECT_TRUE(beats_by_a_standard_error(std::vector<double>{1.6, 1.4, 1.5, 1.5}, std::vector<double>{1, 1, 1, 1}));
  EXPECT_FALSE(beats_by_a_standard_error(std::vector<double>{1, 1, 1, 1}, std::vector<double>{1, 1, 1, 1})) << "equal is not ahead";
  EXPECT_FALSE(beats_by_a_standard_error(std::vector<double>{0, 0}, std::vector<double>{1, 1})) << "behind";
  EXPECT_FALSE(beats_by_a_standard_error(std::vector<double>{3}, std::vector<double>{0})) << "one query says nothing of the noise";
  EXPECT_THROW(beats_by_a_standard_error(std::vector<double>{1, 2}, std::vector<double>{1}), Error);
}

}  // namespace
}  // namespace xmc
