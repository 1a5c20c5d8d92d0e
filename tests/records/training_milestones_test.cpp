// The schedule changes the Live view marks: read from the config alone.
#include "engine/records/training_milestones.h"
#include "engine/sampler/negatives_options.h"
#include "engine/method/ngame/ngame_options.h"
#include "engine/method/irene/irene_options.h"
#include "engine/method/xrlinear/xrlinear_options.h"
#include "engine/sampler/psl_options.h"
#include "engine/sampler/cluster_batch_options.h"
#include "engine/sampler/query_batcher_options.h"

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
  c.edit<NgameOptions>().m4_epochs = 3;
  c.edit<QueryBatcherOptions>().type = "cluster";
  c.edit<ClusterBatchOptions>().cluster_size = 16;
  c.edit<ClusterBatchOptions>().start_epoch = 2;
  c.edit<ClusterBatchOptions>().refresh_every = 1;  // every epoch: not marked
  c.edit<ClusterBatchOptions>().grow_at = {4, 6, 20};  // 20 is past the encoder's epochs
  c.edit<NegativesOptions>().kind = "inbatch";
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{
                          {2, "clusters, C = 16"}, {4, "C = 32"}, {6, "C = 64"}, {8, "M4: classifiers"}}));
}

TEST(TrainingMilestones, XrlinearCountsAndMarksItsSecondStageWhenItHasOne) {
  // Its rankers are fit once (epochs is not read); with the fusion weight chosen on held-out rows they are fit
  // again on every row: two stages, the second marked, so the run bar and the plot agree.
  TrainConfig c;
  c.method = "xrlinear";
  c.epochs = 7;
  EXPECT_EQ(total_epochs(c), 1);
  EXPECT_TRUE(marks(c).empty());
  c.edit<XrlinearOptions>().fusion_weight_from = "held-out";
  EXPECT_EQ(total_epochs(c), 2);
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{1, "rankers on every row"}}));
  // Settings chosen on held-out rows: the choice, then the rankers on every row.
  c.edit<XrlinearOptions>().fusion_weight_from = "value";
  c.edit<XrlinearOptions>().choose = "held-out";
  EXPECT_EQ(total_epochs(c), 2);
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{1, "rankers on every row"}}));
}

// IRENE keeps its best generator when training ends (the weighted sum unless a trained one beats it): the final
// evaluation's step from the curve is marked there; the training-free weighted sum has no such step.
TEST(TrainingMilestones, IreneMarksWhereItKeepsItsBestGenerator) {
  TrainConfig c;
  c.method = "irene";
  c.epochs = 6;
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{6, "best generator kept"}}));
  c.edit<IreneOptions>().generator = "weighted_sum";
  EXPECT_TRUE(marks(c).empty());
}

TEST(TrainingMilestones, ShortlistRefreshesAreMarkedWhenNotEveryEpoch) {
  TrainConfig c;
  c.method = "unidec";
  c.epochs = 12;
  c.edit<NegativesOptions>().kind = "hard";
  c.edit<PslOptions>().refresh_every = 5;  // τ: refreshed at the start of epochs 0, 5, 10
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{5, "shortlists"}, {10, "shortlists"}}));
  c.edit<NegativesOptions>().start_epoch = 2;  // in-batch negatives alone before epoch 2: searched at 2, 7
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{2, "shortlists"}, {7, "shortlists"}}));
  c.edit<NegativesOptions>().start_epoch = 0;
  c.method = "dexml";
  c.edit<NegativesOptions>().refresh_every = 1;
  EXPECT_TRUE(marks(c).empty());
  c.edit<NegativesOptions>().refresh_every = 4;
  c.edit<QueryBatcherOptions>().type = "cluster";
  c.edit<ClusterBatchOptions>().start_epoch = 4;
  c.edit<ClusterBatchOptions>().refresh_every = 1;
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{4, "clusters, C = 16, shortlists"}, {8, "shortlists"}}));
}

TEST(TrainingMilestones, IreneHasNoBatchOrderMarks) {
  // An IRENE config keeps the batch order of the preset it came from, but IRENE trains no encoder on query
  // batches: no re-clustering marks.
  TrainConfig c;
  c.method = "irene";
  c.epochs = 8;
  c.edit<QueryBatcherOptions>().type = "cluster";
  c.edit<ClusterBatchOptions>().start_epoch = 2;
  c.edit<ClusterBatchOptions>().grow_at = {4};
  EXPECT_EQ(marks(c), (std::vector<std::pair<double, std::string>>{{8, "best generator kept"}})) << "its own mark only";
  EXPECT_FALSE(takes_tsne_snapshots(c)) << "nor t-SNE snapshots: no batches of its own";
  c.method = "dexml";  // the same schedule for a method that trains its encoder is marked
  EXPECT_FALSE(marks(c).empty());
  EXPECT_TRUE(takes_tsne_snapshots(c));
  c.tsne_every = 0;
  EXPECT_FALSE(takes_tsne_snapshots(c));
}

TEST(TrainingMilestones, APlainRunHasNone) {
  TrainConfig c;  // dexml, random batches, in-batch negatives
  EXPECT_TRUE(marks(c).empty());
  c.method = "ngame";
  c.edit<NgameOptions>().m4_epochs = 0;  // no M4 stage: no switch
  EXPECT_TRUE(marks(c).empty());
}

}  // namespace
}  // namespace xmc
