// Sweep grids as a user types them: values split at commas outside lists and quotes, every combination.
#include "engine/config/sweep_grid.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"

namespace xmc {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_sweep_axis(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(SweepGrid, ValuesSplitAtTopLevelCommasOnly) {
  EXPECT_EQ(parse_sweep_axis("lr=0.001,0.003").values, (std::vector<std::string>{"0.001", "0.003"}));
  const SweepAxis k = parse_sweep_axis("eval.k=[1,3],[1,5,10]");
  EXPECT_EQ(k.key, "eval.k");
  EXPECT_EQ(k.values, (std::vector<std::string>{"[1,3]", "[1,5,10]"}));
  EXPECT_EQ(parse_sweep_axis(R"(name="a,b","c")").values, (std::vector<std::string>{R"("a,b")", R"("c")"}));
  EXPECT_EQ(parse_sweep_axis("loss=triplet").values, std::vector<std::string>{"triplet"});
  EXPECT_EQ(parse_sweep_axis("sampler.type= random , cluster").values, (std::vector<std::string>{"random", "cluster"}));
}

TEST(SweepGrid, MalformedAxesAreNamedErrors) {
  EXPECT_NE(error_of("lr").find("expected KEY=VALUE,VALUE"), std::string::npos);
  EXPECT_NE(error_of("=1,2").find("expected KEY=VALUE,VALUE"), std::string::npos);
  EXPECT_NE(error_of("lr=").find("an empty value"), std::string::npos);
  EXPECT_NE(error_of("lr=1,,2").find("an empty value"), std::string::npos);
  EXPECT_NE(error_of("lr=1,2,").find("an empty value"), std::string::npos);
  EXPECT_NE(error_of("lr=1, ,2").find("an empty value"), std::string::npos);
  EXPECT_NE(error_of("lr=0.1,0.1").find("the value 0.1 is given twice"), std::string::npos);
}

TEST(SweepGrid, PointsAreEveryCombinationLastAxisFastest) {
  const auto points = sweep_points({parse_sweep_axis("lr=1,2"), parse_sweep_axis("temperature=0.05,0.1,0.2")});
  ASSERT_EQ(points.size(), 6u);  // 2 × 3
  EXPECT_EQ(points[0], (std::vector<std::string>{"lr=1", "temperature=0.05"}));
  EXPECT_EQ(points[1], (std::vector<std::string>{"lr=1", "temperature=0.1"}));
  EXPECT_EQ(points[5], (std::vector<std::string>{"lr=2", "temperature=0.2"}));
  EXPECT_TRUE(sweep_points({}).empty());
  EXPECT_THROW(sweep_points({parse_sweep_axis("lr=1"), parse_sweep_axis("lr=2")}), ConfigError);  // one key, one axis
  std::string many = "seed=0";
  for (int i = 1; i < 200; ++i) many += "," + std::to_string(i);
  EXPECT_THROW(sweep_points({parse_sweep_axis(many), parse_sweep_axis("lr=" + many.substr(5))}), ConfigError);  // 40000 points
  EXPECT_EQ(sweep_grid_json({parse_sweep_axis("lr=1,2")}), R"([{"key":"lr","values":["1","2"]}])");
}

}  // namespace
}  // namespace xmc
