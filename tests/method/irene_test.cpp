// IRENE: the generator on hand-made inputs (shape, start as the weighted sum, determinism), the weighted sum
// worked by hand against the base run's own vectors, and small runs of both generators on a zero-shot split.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/zero_shot_split.h"
#include "engine/eval/paired_gain.h"
#include "engine/method/irene/irene_generator.h"
#include "engine/method/trained_run.h"
#include "engine/session/predictor.h"
#include "engine/store/run_store.h"
#include "engine/train/training_run.h"
#include "engine/model/encoder_options.h"
#include "engine/method/irene/irene_options.h"
#include "engine/loss/loss_options.h"
#include "engine/sampler/negatives_options.h"
#include "engine/sampler/psl_options.h"
#include "engine/method/unidec/unidec_options.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

torch::Tensor unit(const torch::Tensor& x) { return x / x.norm(2, -1, true); }

/// A zero-shot split of the keyword set (3 novel, 4 pseudo-novel of 12 labels) and a unidec base run on it.
struct ZeroShotFixture {
  test::TempDir dir;
  std::filesystem::path data, db;
  std::int64_t base_run = 0;
  ZeroShotFixture() {
    test::write_keyword_dataset(dir / "source", 11, 600, 200);
    data = dir / "zs";
    db = dir / "runs.sqlite";
    split_zero_shot({.in = dir / "source", .out = data, .novel_frac = 0.25, .val_frac = 0.34, .seed = 1});
    TrainConfig c;
    c.dataset = data;
    c.method = "unidec";
    c.edit<LossOptions>().kind = "decoupled_softmax";
    c.edit<NegativesOptions>().kind = "inbatch";
    c.edit<EncoderOptions>().dim = 32;
    c.batch_size = 32;
    c.epochs = 4;
    c.lr = 0.01;
    c.threads = 1;
    c.eval_every = 0;
    c.eval_k = {1, 3};
    c.eval_top = 10;
    c.edit<PslOptions>().de_head = "normalize";
    c.edit<UnidecOptions>().clf_head = "none";
    TrainingRun run(c, db);
    run.run();
    base_run = run.run_id();
  }
  TrainConfig irene(const std::string& generator) const {
    TrainConfig c;
    c.dataset = data;
    c.method = "irene";
    c.edit<IreneOptions>().base_run = base_run;
    c.edit<IreneOptions>().generator = generator;
    c.epochs = 3;
    c.batch_size = 16;
    c.lr = 0.001;
    c.threads = 1;
    c.eval_k = {1, 3};
    c.eval_top = 10;
    return c;
  }
};

}  // namespace

TEST(IreneGenerator, StartsAsTheWeightedSumAndIsDeterministic) {
  torch::manual_seed(3);
  const torch::Tensor e = unit(torch::randn({5, 8})), w = unit(torch::randn({5, 3, 8})), s = torch::rand({5, 3}) * 2 - 1;
  IreneGenerator sum(IreneGeneratorOptions{.dim = 8, .transformer = false, .temperature = 0.5});
  // By hand: a = softmax(s / T), u = norm(e + Σ a_n w_n).
  const torch::Tensor a = torch::exp(s / 0.5) / torch::exp(s / 0.5).sum(1, true);
  const torch::Tensor by_hand = unit(e + (a.unsqueeze(2) * w).sum(1));
  EXPECT_TRUE(torch::allclose(sum->forward(e, w, s), by_hand, 1e-5, 1e-6));

  torch::manual_seed(9);
  IreneGenerator one(IreneGeneratorOptions{.dim = 8, .transformer = true, .heads = 4, .temperature = 0.5});
  torch::manual_seed(9);
  IreneGenerator two(IreneGeneratorOptions{.dim = 8, .transformer = true, .heads = 4, .temperature = 0.5});
  one->eval();
  two->eval();
  const torch::Tensor u = one->forward(e, w, s);
  EXPECT_EQ(u.sizes(), (std::vector<std::int64_t>{5, 8}));
  EXPECT_TRUE(torch::allclose(u.norm(2, 1), torch::ones({5}), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(u, by_hand, 1e-5, 1e-6)) << "an untrained transformer is the weighted sum";
  // Moved off the start, the same seed still gives the same generator.
  for (auto* g : {&one, &two}) {
    torch::NoGradGuard no_grad;
    torch::manual_seed(4);
    for (auto& p : (*g)->parameters()) p.add_(torch::randn(p.sizes()) * 0.1);
  }
  EXPECT_FALSE(torch::allclose(one->forward(e, w, s), by_hand, 1e-3, 1e-3));
  EXPECT_TRUE(torch::equal(one->forward(e, w, s), two->forward(e, w, s)));
  EXPECT_THROW(IreneGenerator(IreneGeneratorOptions{.dim = 10, .transformer = true, .heads = 4}), ConfigError);
  // The refusal says which heads would do; 0 chooses the most of 4, 2, 1 that divides the size (UniDEC's 256
  // classifier columns plus a learned bias make 257, a prime: one head).
  try {
    IreneGenerator(IreneGeneratorOptions{.dim = 10, .transformer = true, .heads = 4});
  } catch (const ConfigError& refusal) {
    EXPECT_NE(std::string(refusal.what()).find("heads that do: 1, 2, 5, 10"), std::string::npos) << refusal.what();
  }
  EXPECT_NO_THROW(IreneGenerator(IreneGeneratorOptions{.dim = 257, .transformer = true, .heads = 0}));
  EXPECT_NO_THROW(IreneGenerator(IreneGeneratorOptions{.dim = 10, .transformer = true, .heads = 0}));
}

TEST(Irene, WeightedSumOfTheNearestObservedLabelsWorkedByHandAndBothGeneratorsRun) {
  ZeroShotFixture f;
  TrainingRun sum_run(f.irene("weighted_sum"), f.db);
  const TrainResult sum = sum_run.run();
  ASSERT_EQ(sum.outcome, RunOutcome::Completed);
  std::vector<std::string> settings;
  for (const auto& [mode, evaluation] : sum.modes) settings.push_back(mode);
  EXPECT_EQ(settings, (std::vector<std::string>{"zero_shot", "zero_shot_base", "generalized", "generalized_base"}));

  // By hand from the base run: e = its zero-shot clf vector of a label's text, the K = 3 nearest labels that
  // are neither novel nor pseudo-novel (never the label itself), a = softmax(cos / 0.1), u = norm(e + Σ a w).
  const Dataset d = load_dataset(f.data);
  const ZeroShotSplit split = read_zero_shot_split(f.data, d.num_train(), d.num_test(), d.num_labels());
  TrainedRun base = load_trained_run(f.db, f.base_run);
  const TokenizedCorpus labels = base.method->tokenizer().tokenize(d.label_text);
  const auto base_modes = base.method->inference_modes(labels, silent_progress());
  const auto clf = std::find_if(base_modes.begin(), base_modes.end(), [](const InferenceMode& m) { return m.name == "clf"; });
  ASSERT_NE(clf, base_modes.end());
  const torch::Tensor e = base.method->new_label_vectors(labels)[static_cast<std::size_t>(clf - base_modes.begin())];
  std::set<std::int32_t> untrained(split.novel.begin(), split.novel.end());
  untrained.insert(split.pseudo_novel.begin(), split.pseudo_novel.end());
  const torch::Tensor mean_query = base.method->encode_queries(clf->query_encoder, base.method->tokenizer().tokenize(d.train_text), silent_progress(), "")
                                       .mean(0);
  std::vector<std::int64_t> observed;
  for (std::int64_t n = 0; n < d.num_labels(); ++n)
    if (!untrained.count(static_cast<std::int32_t>(n))) observed.push_back(n);
  const torch::Tensor mean_classifier = clf->label_matrix.index_select(0, torch::tensor(observed)).mean(0);
  TrainedRun irene = load_trained_run(f.db, sum_run.run_id());
  const auto modes = irene.method->inference_modes(labels, silent_progress());
  ASSERT_TRUE(modes[0].subset);
  EXPECT_EQ(modes[0].subset->label_ids, std::vector<std::int64_t>(split.novel.begin(), split.novel.end()));
  for (std::size_t i = 0; i < split.novel.size(); ++i) {
    const std::int32_t l = split.novel[i];
    std::vector<std::pair<float, std::int32_t>> near;
    for (std::int32_t n = 0; n < d.num_labels(); ++n)
      if (!untrained.count(n)) near.push_back({torch::dot(unit(e[l]), unit(e[n])).item<float>(), n});
    std::sort(near.rbegin(), near.rend());
    torch::Tensor weights = torch::zeros({3}), sum_w = torch::zeros_like(e[l]);
    for (int k = 0; k < 3; ++k) weights[k] = near[static_cast<std::size_t>(k)].first / 0.1;
    weights = torch::softmax(weights, 0);
    for (int k = 0; k < 3; ++k) sum_w += weights[k] * clf->label_matrix[near[static_cast<std::size_t>(k)].second];
    const torch::Tensor u = unit(e[l] + sum_w);
    const torch::Tensor row = modes[0].label_matrix[static_cast<std::int64_t>(i)];
    ASSERT_EQ(row.size(0), u.size(0) + 1) << "[u, its score offset]";
    EXPECT_TRUE(torch::allclose(row.narrow(0, 0, u.size(0)), u, 1e-4, 1e-5)) << "novel label " << l;
    // The offset q̄·(w̄ − u): the mean training query (600 rows: all of them) and the mean observed classifier.
    EXPECT_NEAR(row[-1].item<double>(), torch::dot(mean_classifier - u, mean_query).item<double>(), 1e-4) << "novel label " << l;
    EXPECT_TRUE(torch::allclose(modes[1].label_matrix[static_cast<std::int64_t>(i)], e[l], 1e-5, 1e-6)) << "the baseline is the base's own vector";
  }
  // Generalized: trained labels keep the base classifiers; the others get synthesized ones.
  for (std::int32_t l = 0; l < d.num_labels(); ++l)
    if (!untrained.count(l)) {
      EXPECT_TRUE(torch::equal(modes[2].label_matrix[l].narrow(0, 0, e.size(1)), clf->label_matrix[l].to(torch::kFloat32))) << l;
      EXPECT_EQ(modes[2].label_matrix[l][-1].item<float>(), 0.0f) << "observed classifiers get no offset";
    }

  // The transformer trains on pseudo-novel labels and ends at least as good as the weighted sum on them.
  TrainingRun transformer_run(f.irene("transformer"), f.db);
  const TrainResult transformer = transformer_run.run();
  ASSERT_EQ(transformer.outcome, RunOutcome::Completed);
  EXPECT_EQ(transformer.modes.size(), 4u);
  EXPECT_GT(RunStore(f.db).scalars(transformer_run.run_id(), "loss").size(), 0u);
}

// An IRENE run's random stream is its own seed's: opening its base run (or any run, to predict) leaves the
// process's generators as they were, so seeds 1 and 2 train different generators and seed 1 twice the same one.
TEST(Irene, ItsOwnSeedDecidesItsTrainingNotTheBaseRunsCheckpoint) {
  ZeroShotFixture f;
  torch::manual_seed(7);
  const torch::Tensor drawn = torch::rand({8});
  torch::manual_seed(7);
  { const TrainedRun base = load_trained_run(f.db, f.base_run); }
  EXPECT_TRUE(torch::equal(torch::rand({8}), drawn)) << "opening a run changed the caller's random stream";

  auto generator_after = [&](std::uint64_t seed) {
    TrainConfig c = f.irene("transformer");
    c.seed = seed;
    TrainingRun run(c, f.db);
    EXPECT_EQ(run.run().outcome, RunOutcome::Completed);
    TrainedRun trained = load_trained_run(f.db, run.run_id());
    std::vector<torch::Tensor> parameters;
    for (const auto& p : trained.method->module().parameters()) parameters.push_back(p.detach().clone());
    return parameters;
  };
  const auto one = generator_after(1), two = generator_after(2), one_again = generator_after(1);
  ASSERT_EQ(one.size(), two.size());
  ASSERT_EQ(one.size(), one_again.size());
  bool seeds_differ = false;
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(torch::equal(one[i], one_again[i])) << "parameter " << i;
    seeds_differ = seeds_differ || !torch::equal(one[i], two[i]);
  }
  EXPECT_TRUE(seeds_differ) << "seeds 1 and 2 trained the same generator";
}

// Labels added by text are synthesized by IRENE (on the IRENE run, and on its base run once an IRENE run is
// built on it), retrievable by their own text, kept across a restart, and refused when empty or repeated.
TEST(Irene, AddedLabelsAreSynthesizedRetrievableAndSurviveARestart) {
  ZeroShotFixture f;
  {
    Predictor plain = Predictor::open(f.db, f.base_run);
    EXPECT_EQ(plain.synthesized_by(), "embedding") << "no IRENE run is built on the base run yet";
  }
  TrainingRun irene_run(f.irene("weighted_sum"), f.db);
  irene_run.run();
  const std::string text = "kw5 topic kw7 noise3";
  std::int64_t id = 0;
  {
    Predictor irene = Predictor::open(f.db, irene_run.run_id());
    EXPECT_EQ(irene.synthesized_by(), "irene");
    const std::int64_t labels = irene.num_labels();
    id = irene.add_label(text);
    EXPECT_EQ(id, labels);
    const auto top = irene.predict({text}, 1, "generalized").front();
    ASSERT_EQ(top.size(), 1u);
    EXPECT_EQ(top[0].label, id) << "a label is found by its own text";
    EXPECT_EQ(irene.predict({text}, 1, "zero_shot").front()[0].label, id) << "the zero-shot setting ranks added labels too";
    // One search answers every mode: per mode the top labels predict() gives and each label's rank, which is
    // its place in the mode's whole exact ranking; a mode of a label subset (zero_shot, zero_shot_base: the
    // novel labels and the added one) gives rank 0 to the labels it does not rank.
    std::vector<std::int64_t> every_label(static_cast<std::size_t>(irene.num_labels()));
    std::iota(every_label.begin(), every_label.end(), 0);
    const SearchAnswer answer = irene.search(text, 3, every_label);
    ASSERT_EQ(answer.modes.size(), irene.modes().size());
    EXPECT_GT(answer.encode_ms, 0.0);
    for (std::size_t m = 0; m < answer.modes.size(); ++m) {
      const ModeAnswer& found = answer.modes[m];
      EXPECT_EQ(found.mode, irene.modes()[m]);
      const auto top3 = irene.predict({text}, 3, found.mode).front();
      ASSERT_EQ(found.top.size(), top3.size()) << found.mode;
      for (std::size_t r = 0; r < top3.size(); ++r) EXPECT_EQ(found.top[r].label, top3[r].label) << found.mode;
      const auto whole = irene.predict({text}, irene.num_labels(), found.mode).front();
      std::vector<std::int64_t> expected(every_label.size(), 0);
      for (std::size_t r = 0; r < whole.size(); ++r) expected[static_cast<std::size_t>(whole[r].label)] = static_cast<std::int64_t>(r + 1);
      ASSERT_EQ(found.ranks.size(), every_label.size());
      for (std::size_t l = 0; l < every_label.size(); ++l) EXPECT_EQ(found.ranks[l].rank, expected[l]) << found.mode << " label " << l;
      const auto unranked = std::count(expected.begin(), expected.end(), 0);
      if (found.mode.starts_with("zero_shot")) EXPECT_GT(unranked, 0) << found.mode << " ranks the novel labels only";
      else EXPECT_EQ(unranked, 0) << found.mode;
    }
    EXPECT_THROW(irene.search(text, 3, {irene.num_labels()}), ConfigError) << "a label out of range is named";
    EXPECT_THROW(irene.add_label("  " + text + " "), ConfigError) << "a repeated text is refused";
    EXPECT_THROW(irene.add_label(" \t "), ConfigError);
    EXPECT_THROW(irene.add_label("kw0 topic"), ConfigError) << "a dataset label's own text is refused";
  }
  Predictor restarted = Predictor::open(f.db, irene_run.run_id());
  ASSERT_EQ(restarted.added_labels().size(), 1u);
  EXPECT_EQ(restarted.added_labels()[0].synthesized_by, "irene");
  EXPECT_EQ(restarted.label_texts().back(), text);
  EXPECT_EQ(restarted.predict({text}, 1, "generalized").front()[0].label, id);
  // The base run now has an IRENE run built on it: its added labels get IRENE's classifiers in its clf mode.
  Predictor base = Predictor::open(f.db, f.base_run);
  EXPECT_EQ(base.synthesized_by(), "irene run " + std::to_string(irene_run.run_id()));
  const std::int64_t base_id = base.add_label(text);
  EXPECT_EQ(base.predict({text}, 1, "clf").front()[0].label, base_id);
}

TEST(Irene, RefusesWhatItCannotBuildOn) {
  ZeroShotFixture f;
  TrainConfig c = f.irene("transformer");
  c.edit<IreneOptions>().base_run = 0;
  EXPECT_THROW(validate(c), ConfigError);
  // Every refusal comes before the run is recorded: a mistake leaves no failed run behind.
  const std::size_t runs_before = RunStore(f.db).list_runs().size();
  c.edit<IreneOptions>().base_run = 99;
  try {
    TrainingRun(c, f.db);
    FAIL() << "irene was recorded on a run that does not exist";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("irene.base_run: there is no run 99"), std::string::npos) << e.what();
  }
  // A base run of another dataset is refused by name.
  test::write_keyword_dataset(f.dir / "other", 2, 100, 20);
  c = f.irene("weighted_sum");
  c.dataset = f.dir / "other";
  try {
    TrainingRun(c, f.db);
    FAIL() << "irene was recorded on a run of another dataset";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("the same zero-shot split is needed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(RunStore(f.db).list_runs().size(), runs_before);
}

// The selection rule on hand-worked paired scores: differences 0.5, -0.3, 0.4, -0.2 have mean 0.1 and
// deviations 0.4, -0.4, 0.3, -0.3: sample standard deviation sqrt(0.5 / 3) = 0.40825, standard error 0.20412.
TEST(Irene, ATrainedGeneratorIsKeptOnlyWhenClearlyAheadOfTheKeptOne) {
  const std::vector<double> baseline{0.2, 0.6, 0.1, 0.5};
  const std::vector<double> noisy{0.7, 0.3, 0.5, 0.3};
  const PairedGain gain = paired_gain(noisy, baseline);
  EXPECT_NEAR(gain.mean, 0.1, 1e-12);
  EXPECT_NEAR(gain.standard_error, std::sqrt(0.5 / 3) / 2, 1e-12);
  EXPECT_TRUE(clearly_better(gain, 0)) << "any gain counts at margin 0";
  EXPECT_FALSE(clearly_better(gain, 2)) << "0.1 is about half a standard error: noise";
  const std::vector<double> steady{0.3, 0.7, 0.2, 0.6};  // +0.1 on every label: no spread
  EXPECT_TRUE(clearly_better(paired_gain(steady, baseline), 2));
  EXPECT_FALSE(clearly_better(paired_gain(baseline, baseline), 0)) << "a tie keeps the kept one";
  EXPECT_FALSE(clearly_better(paired_gain(baseline, steady), 0)) << "a loss keeps the kept one";
  EXPECT_THROW(paired_gain(steady, std::vector<double>{0.1}), Error);
  EXPECT_THROW(paired_gain(std::vector<double>{}, std::vector<double>{}), Error);
}

}  // namespace xmc
