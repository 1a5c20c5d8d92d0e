// The schedule changes the Live view marks: read from the config alone.
#include "engine/train/training_milestones.h"

#include <gtest/gtest.h>

namespace xmc {
namespace {

std::vector<std::pair<double, std::string>> marks(const TrainConfig& config) {
  std::vector<std::pair<double, std::string>> out;
  for (const auto& m : training_milestones(config)) out.emplace_back(m.epoch, m.label);
  return out;
}

TEST(TrainingMilestones, NgameMarksClusteringGrowthAndTheSwitchToClassifiers) {
  TrainConfig c;
  c.method = "ngame";
  c.epochs = 8;
  c.ngame_m4_epochs = 3;
  c.sampler_type = "cluster";
  c.cluster_size = 16;
  c.sampler_start_epoch = 2;
  c.sampler_refresh_every = 1;  // every epoch: not marked
  c.sampler_grow_at = {4, 6, 20};  // 20 is past the encoder's epochs
  c.negatives = "inbatch";
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{
                          {2, "clusters, C = 16"}, {4, "C = 32"}, {6, "C = 64"}, {8, "M4: classifiers"}}));
}

TEST(TrainingMilestones, ShortlistRefreshesAreMarkedWhenNotEveryEpoch) {
  TrainConfig c;
  c.method = "unidec";
  c.epochs = 12;
  c.negatives = "hard";
  c.psl_refresh_every = 5;  // τ: refreshed at the start of epochs 0, 5, 10
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{5, "shortlists"}, {10, "shortlists"}}));
  c.method = "dexml";
  c.shortlist_refresh_every = 1;
  EXPECT_TRUE(marks(c).empty());
  c.shortlist_refresh_every = 4;
  c.sampler_type = "cluster";
  c.sampler_start_epoch = 4;
  c.sampler_refresh_every = 1;
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{4, "clusters, C = 16, shortlists"}, {8, "shortlists"}}));
}

TEST(TrainingMilestones, APlainRunHasNone) {
  TrainConfig c;  // dexml, random batches, in-batch negatives
  EXPECT_TRUE(marks(c).empty());
  c.method = "ngame";
  c.ngame_m4_epochs = 0;  // no M4 stage: no switch
  EXPECT_TRUE(marks(c).empty());
}

}  // namespace
}  // namespace xmc
