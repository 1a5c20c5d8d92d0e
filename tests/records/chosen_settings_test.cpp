// Values a run chose while training, read back from its scalars and shown beside the configured ones.
#include "engine/records/chosen_settings.h"

#include <gtest/gtest.h>

namespace xmc {
namespace {

TEST(ChosenSettings, TheLastChoiceOfEachKeyAmongOtherScalars) {
  const std::vector<ScalarPoint> scalars = {
      {10, 1.0, "loss", 0.7, 1.0},
      {12, 1.0, "chosen/unidec.concat_weight", 0.3, 2.0},
      {12, 1.0, "chosen", 9.0, 2.0},             // no key after the prefix: not a setting
      {13, 1.0, "chosenx/lr", 9.0, 2.0},         // another prefix
      {20, 2.0, "chosen/a.b", 4.0, 3.0},
      {30, 3.0, "chosen/unidec.concat_weight", 0.8, 4.0},  // chosen again (a later stage): this one counts
  };
  const std::vector<ChosenSetting> chosen = chosen_settings(scalars);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].key, "a.b");
  EXPECT_EQ(chosen[0].value, 4.0);
  EXPECT_EQ(chosen[1].key, "unidec.concat_weight");
  EXPECT_EQ(chosen[1].value, 0.8);
  EXPECT_EQ(chosen[1].step, 30);
  EXPECT_TRUE(chosen_settings({{1, 0.1, "loss", 1.0, 1.0}}).empty());
}

TEST(ChosenSettings, ShownAsUsedWithTheConfiguredValueBeside) {
  EXPECT_EQ(chosen_value_text({"unidec.concat_weight", 1.0, 5}, "0.5"), "1 (chosen while training; configured 0.5)");
  EXPECT_EQ(chosen_value_text({"x", 0.30000000000000004, 5}, ""), "0.3 (chosen while training; configured —)");
  std::map<std::string, std::string> flat = {{"lr", "0.001"}, {"unidec.concat_weight", "0.5"}};
  show_chosen_settings(flat, {{"unidec.concat_weight", 0.7, 9}, {"new.key", 2, 9}});
  EXPECT_EQ(flat.at("lr"), "0.001");
  EXPECT_EQ(flat.at("unidec.concat_weight"), "0.7 (chosen while training; configured 0.5)");
  EXPECT_EQ(flat.at("new.key"), "2 (chosen while training; configured —)");
}

}  // namespace
}  // namespace xmc
