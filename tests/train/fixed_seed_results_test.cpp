// A fixed seed gives fixed results. The expected numbers were recorded from the training loop that came
// before the method plug-ins and the generic trainer (the one-object TrainingRun): the port changed no
// number, at any evaluation, in any inference mode. NGAME's were re-recorded once since, when its
// embeddings dropped the DE head (the normalised encoder output, as in NGAME's code; ngame_method.cpp), and all
// once more when the bow encoder's word vectors started at unit variance (bow_encoder.cpp), and when label pools got
// a random stream of their own (trainer.cpp); NGAME's loss sum moved by 7e-9 when the BLAS stopped running its own
// threads (summation order), and every loss sum by 1e-8 to 1e-7 (relative; no metric moved) when AdamW's update
// became one pass (optim/fused_adamw.h: the same formula, rounded per operation where LibTorch's kernels fuse
// some); all were re-recorded when dropout's masks started coming from a hash of a seed the generator draws
// (model/dropout.h) instead of one bernoulli draw per element (the same distribution, other masks); every loss
// sum moved by 7e-9 to 5e-8 (relative; no metric moved) when the heads' normalisation became one pass
// (model/unit_rows.h: the squares summed in double, where LibTorch's norm sums in float), and the decoupled
// softmax's by 2e-8 and 7e-8 when it became one hand-written pass each way (loss/symmetric_loss.cpp); the two runs
// with clustered batches were re-recorded when the query embeddings kept for clustering became half precision
// (method/training_stages.h: other clusters where rows are near a split, at half the memory), and again when the
// clustering started encoding the training queries afresh with the current encoder instead of taking the
// embeddings the last epoch's steps left (NGAME's own recipe; those were held all through training). A change
// in any value here means the training itself changed (batches, sampled positives, initialisation, dropout's
// masks, the optimiser's arithmetic), never only the code's shape; re-record only for a deliberate change of
// the recipe and say so in the commit. Loss sums (float32 arithmetic summed over every step) are compared to 1e-6
// relative, metrics to 1e-9: the same code built on a CPU whose system BLAS picks other kernels (AVX-512) gave
// loss sums 4e-9 to 3e-8 away from these, and every metric equal, while a change of the recipe (another batch,
// mask or draw) moves a loss sum by far more than 1e-6.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "engine/records/evaluation_modes.h"
#include "engine/store/run_store.h"
#include "engine/train/training_run.h"
#include "engine/model/encoder_options.h"
#include "engine/loss/loss_options.h"
#include "engine/sampler/negatives_options.h"
#include "engine/method/ngame/ngame_options.h"
#include "engine/sampler/cluster_batch_options.h"
#include "engine/sampler/query_batcher_options.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

TrainConfig base_config(const std::filesystem::path& data) {
  TrainConfig c;
  c.dataset = data;
  c.edit<EncoderOptions>().dim = 32;
  c.batch_size = 32;
  c.epochs = 3;
  c.lr = 0.01;
  c.threads = 1;
  c.seed = 11;
  c.eval_k = {1, 5};
  c.eval_top = 10;
  c.tsne_every = 0;
  return c;
}

/// Every evaluation's P@k, nDCG@k and PSP@k of every inference mode ("epoch/metric"), and the sum of
/// each loss series over all steps ("sum/loss"): the losses catch any change of the arithmetic, the
/// metrics any change of evaluation.
std::map<std::string, double> train_and_collect(const TrainConfig& config, const std::filesystem::path& db) {
  TrainingRun run(config, db);
  run.run();
  RunStore store(db);
  std::map<std::string, double> out;
  // Each mode's metrics as recorded before the primary mode was also stored under its prefix.
  for (const EvalPoint& e : without_primary_copies(store.evaluations(run.run_id()))) {
    char epoch[32];
    std::snprintf(epoch, sizeof epoch, "%.2f", e.epoch);
    const bool kept = e.metric.find("P@") != std::string::npos && e.metric.find("PSnDCG") == std::string::npos;
    if (kept) out[std::string(epoch) + "/" + e.metric] = e.value;
  }
  for (const std::string series : {"loss", "m4_loss"}) {
    const auto points = store.scalars(run.run_id(), series);
    if (points.empty()) continue;
    double sum = 0;
    for (const ScalarPoint& p : points) sum += p.value;
    out["sum/" + series] = sum;
  }
  return out;
}

void expect_recorded(const std::map<std::string, double>& got, const std::map<std::string, double>& recorded) {
  if (std::getenv("XMC_PRINT_RESULTS") != nullptr)
    for (const auto& [key, value] : got) std::printf("      {\"%s\", %.17g},\n", key.c_str(), value);
  ASSERT_EQ(got.size(), recorded.size());
  for (const auto& [key, value] : recorded) {
    ASSERT_TRUE(got.count(key)) << key;
    const double relative = key.rfind("sum/", 0) == 0 ? 1e-6 : 1e-9;  // float32 rounding differs between CPUs' kernels
    EXPECT_NEAR(got.at(key), value, relative * std::max(1.0, std::abs(value))) << key;
  }
}

class FixedSeedResults : public ::testing::Test {
 protected:
  void SetUp() override { test::write_keyword_dataset(dir / "data", 5, 300, 90); }
  test::TempDir dir;
};

TEST_F(FixedSeedResults, DexmlInBatchDecoupledSoftmax) {
  TrainConfig c = base_config(dir / "data");
  expect_recorded(train_and_collect(c, dir / "runs.sqlite"), {
      {"1.00/P@1", 0.87777777777777777},
      {"1.00/P@5", 0.34222222222222198},
      {"1.00/PSP@1", 0.86159091464262305},
      {"1.00/PSP@5", 0.90565283918871842},
      {"2.00/P@1", 0.9555555555555556},
      {"2.00/P@5", 0.35555555555555529},
      {"2.00/PSP@1", 0.93938043901860335},
      {"2.00/PSP@5", 0.94032293161474201},
      {"3.00/P@1", 0.94444444444444442},
      {"3.00/P@5", 0.362222222222222},
      {"3.00/PSP@1", 0.92887371319105083},
      {"3.00/PSP@5", 0.95789079614188044},
      {"sum/loss", 31.797415107488632},
  });
}

TEST_F(FixedSeedResults, DexmlHardNegativesOnClusteredBatches) {
  TrainConfig c = base_config(dir / "data");
  c.edit<NegativesOptions>().kind = "hard";
  c.edit<NegativesOptions>().hard_per_query = 2;
  c.edit<NegativesOptions>().shortlist = 5;
  c.edit<NegativesOptions>().refresh_every = 1;
  c.edit<QueryBatcherOptions>().type = "cluster";
  c.edit<ClusterBatchOptions>().cluster_size = 4;
  c.edit<ClusterBatchOptions>().start_epoch = 1;
  expect_recorded(train_and_collect(c, dir / "runs.sqlite"), {
      {"1.00/P@1", 0.8666666666666667},
      {"1.00/P@5", 0.34666666666666629},
      {"1.00/PSP@1", 0.85208366607534947},
      {"1.00/PSP@5", 0.9169777405503613},
      {"2.00/P@1", 0.93333333333333335},
      {"2.00/P@5", 0.36222222222222206},
      {"2.00/PSP@1", 0.91854004008300494},
      {"2.00/PSP@5", 0.95876318697340845},
      {"3.00/P@1", 0.93333333333333335},
      {"3.00/P@5", 0.36444444444444424},
      {"3.00/PSP@1", 0.91823458084553389},
      {"3.00/PSP@5", 0.96443283836380522},
      {"sum/loss", 34.290664494037628},
  });
}

TEST_F(FixedSeedResults, DexmlAllLabelsSoftTopK) {
  TrainConfig c = base_config(dir / "data");
  c.edit<NegativesOptions>().kind = "all";
  c.edit<LossOptions>().kind = "softtopk";
  c.edit<LossOptions>().topk_k = 2;
  c.edit<NegativesOptions>().label_chunk = 5;
  expect_recorded(train_and_collect(c, dir / "runs.sqlite"), {
      {"1.00/P@1", 0.84444444444444444},
      {"1.00/P@5", 0.34444444444444422},
      {"1.00/PSP@1", 0.82997113411324253},
      {"1.00/PSP@5", 0.91145459334726453},
      {"2.00/P@1", 0.93333333333333335},
      {"2.00/P@5", 0.36444444444444424},
      {"2.00/PSP@1", 0.92171705498213041},
      {"2.00/PSP@5", 0.9647683008570147},
      {"3.00/P@1", 0.93333333333333335},
      {"3.00/P@5", 0.36666666666666653},
      {"3.00/PSP@1", 0.91937857710174409},
      {"3.00/PSP@5", 0.97062961708471129},
      {"sum/loss", 23.855363547801971},
  });
}

TEST_F(FixedSeedResults, NgameTripletThenClassifiers) {
  TrainConfig c = base_config(dir / "data");
  c.method = "ngame";
  c.edit<LossOptions>().kind = "triplet";
  c.edit<QueryBatcherOptions>().type = "cluster";
  c.edit<ClusterBatchOptions>().cluster_size = 4;
  c.edit<ClusterBatchOptions>().grow_at = {2};
  c.edit<NgameOptions>().m4_epochs = 2;
  expect_recorded(train_and_collect(c, dir / "runs.sqlite"), {
      {"1.00/P@1", 0.93333333333333335},
      {"1.00/P@5", 0.362222222222222},
      {"1.00/PSP@1", 0.91729924311895694},
      {"1.00/PSP@5", 0.95826247597046199},
      {"2.00/P@1", 0.94444444444444442},
      {"2.00/P@5", 0.36666666666666642},
      {"2.00/PSP@1", 0.92870731393114125},
      {"2.00/PSP@5", 0.97096762802463243},
      {"3.00/P@1", 0.96666666666666667},
      {"3.00/P@5", 0.36888888888888871},
      {"3.00/PSP@1", 0.95007611059745722},
      {"3.00/PSP@5", 0.97679809383064953},
      {"5.00/P@1", 0.97777777777777775},
      {"5.00/P@5", 0.37111111111111095},
      {"5.00/PSP@1", 0.96052619430608499},
      {"5.00/PSP@5", 0.98246861928069451},
      {"5.00/clf/P@1", 0.97777777777777775},
      {"5.00/clf/P@5", 0.36888888888888871},
      {"5.00/clf/PSP@1", 0.96264398456239553},
      {"5.00/clf/PSP@5", 0.97685842157166602},
      {"5.00/emb/P@1", 0.96666666666666667},
      {"5.00/emb/P@5", 0.36888888888888871},
      {"5.00/emb/PSP@1", 0.95007611059745722},
      {"5.00/emb/PSP@5", 0.97679809383064953},
      {"sum/loss", 4.2901912294328213},
      {"sum/m4_loss", 1.733981691300869},
  });
}

}  // namespace
}  // namespace xmc
