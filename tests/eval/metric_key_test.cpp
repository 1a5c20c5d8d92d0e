#include "engine/eval/metric_key.h"

#include <gtest/gtest.h>

namespace xmc {

TEST(MetricKey, ReadsModeFamilyAndK) {
  EXPECT_EQ(MetricKey::parse("P@5"), (MetricKey{"", "P", 5}));
  EXPECT_EQ(MetricKey::parse("emb/nDCG@10"), (MetricKey{"emb", "nDCG", 10}));
  EXPECT_EQ(MetricKey::parse("clf/PSnDCG@3"), (MetricKey{"clf", "PSnDCG", 3}));
  EXPECT_TRUE(MetricKey::parse("P@1").is_primary());
  EXPECT_FALSE(MetricKey::parse("emb/P@1").is_primary());
}

TEST(MetricKey, NamesWithoutAValidKKeepTheirWholeFamily) {
  EXPECT_EQ(MetricKey::parse("loss"), (MetricKey{"", "loss", -1}));
  EXPECT_EQ(MetricKey::parse("P@"), (MetricKey{"", "P@", -1}));
  EXPECT_EQ(MetricKey::parse("P@x"), (MetricKey{"", "P@x", -1}));
  EXPECT_EQ(MetricKey::parse("a@1b"), (MetricKey{"", "a@1b", -1}));
}

TEST(MetricKey, StoredNameRoundTrips) {
  for (const char* name : {"P@1", "emb/P@5", "clf/nDCG@3", "loss", "fused/R@100"}) EXPECT_EQ(MetricKey::parse(name).str(), name);
}

TEST(MetricKey, FamiliesInPaperOrder) {
  EXPECT_LT(MetricKey::parse("P@5").family_rank(), MetricKey::parse("nDCG@5").family_rank());
  EXPECT_LT(MetricKey::parse("nDCG@5").family_rank(), MetricKey::parse("PSP@5").family_rank());
  EXPECT_LT(MetricKey::parse("PSP@5").family_rank(), MetricKey::parse("PSnDCG@5").family_rank());
  EXPECT_LT(MetricKey::parse("PSnDCG@5").family_rank(), MetricKey::parse("R@5").family_rank());
  EXPECT_LT(MetricKey::parse("R@5").family_rank(), MetricKey::parse("other@5").family_rank());
}

}  // namespace xmc
