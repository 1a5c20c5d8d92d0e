// The run config and its components' option groups, seen as a user's stored runs and overrides see them:
// configs stored before the options moved beside their components load to the same values, a component's
// options are its own (copies do not share edits), and a resumed run may change only what does not shape
// the model or its data.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "engine/config/component_config.h"
#include "engine/config/component_info.h"
#include "engine/config/train_config.h"
#include "engine/core/error.h"
#include "engine/method/irene/irene_options.h"
#include "engine/method/ngame/ngame_options.h"
#include "engine/method/unidec/unidec_options.h"
#include "engine/model/transformer_options.h"
#include "engine/model/bow/bow_options.h"
#include "engine/model/encoder_options.h"
#include "engine/sampler/negatives_kind.h"
#include "engine/sampler/negatives_options.h"
#include "engine/sampler/psl_options.h"
#include "engine/sampler/cluster_batch_options.h"
#include "engine/sampler/query_batcher_options.h"
#include "engine/loss/loss_options.h"
#include "engine/optim/optim_options.h"
#include "engine/session/run_config_view.h"

namespace xmc {
namespace {

// A UniDEC run's config as the store kept it before this layout (every key, flat, as the one-struct
// TrainConfig wrote it), with values other than the defaults in each component.
const char* kStoredUnidecConfig = R"({
  "all.label_chunk": 2048, "batch_size": 512, "checkpoint.every": 1, "checkpoint.every_minutes": 5.0,
  "checkpoint.every_steps": 0, "dataset": "data/bibtex", "device": "cpu", "distributed.backend": "auto",
  "distributed.overlap": "on", "encoder.bag": "l2", "encoder.block": "none", "encoder.dim": 128,
  "encoder.dropout": 0.2, "encoder.init_std": 0.1, "encoder.max_len": 48, "encoder.min_count": 2,
  "encoder.path": "", "encoder.pooling": "cls", "encoder.precision": "bf16", "encoder.type": "bow", "epochs": 12,
  "eval.every": 2, "eval.index": "exact", "eval.k": [1, 3, 5], "eval.top": 50, "grad_clip": 1.0, "hard.per_query": 4,
  "hard.refresh_every": 3, "hard.shortlist": 64, "hardest_k": 7, "head_lr_scale": 1.0, "irene.base_run": 0,
  "irene.calibration": "mean_query", "irene.generator": "transformer", "irene.heads": 4, "irene.neighbours": 3,
  "irene.positive_weight": 10.0, "irene.selection_margin": 2.0, "irene.temperature": 0.1, "loss": "decoupled_softmax",
  "lr": 0.003, "margin": 0.25, "max_steps": 0, "method": "unidec", "name": "bibtex unidec", "negatives": "hard",
  "ngame.fusion": 0.4, "ngame.m4_epochs": 2, "prefetch": "auto", "psl.de_head": "normalize", "psl.directions": "both",
  "psl.hard_negatives": 5, "psl.pool_size": 0, "psl.positives": 2, "psl.refresh_every": 4, "psl.shortlist": 90,
  "sampler.cluster_size": 32, "sampler.grow_at": [3, 6], "sampler.refresh_every": 2, "sampler.start_epoch": 1,
  "sampler.type": "cluster", "schedule": "cosine", "seed": 7, "temperature": 0.07, "threads": 2, "topk_k": 5.0,
  "tsne.every": 1, "tsne.query": -1, "unidec.bce_weight": 0.0, "unidec.classifier_init": "label_text",
  "unidec.classifier_lr": 0.02, "unidec.classifier_optimizer": "lazy_adamw", "unidec.clf_head": "linear",
  "unidec.concat_holdout": 0.1, "unidec.concat_weight": 0.97, "unidec.label_bias": "learned", "unidec.lambda": 0.3,
  "warmup": 0.1, "weight_decay": 0.01})";

TEST(OptionGroups, AConfigStoredBeforeTheSplitLoadsToTheSameValues) {
  const TrainConfig c = parse_train_config(kStoredUnidecConfig, "stored run");
  // Each component reads what the stored run had.
  EXPECT_EQ(c.method, "unidec");
  EXPECT_EQ(c.batch_size, 512);
  EXPECT_EQ(c.get<EncoderOptions>().dim, 128);
  EXPECT_DOUBLE_EQ(c.get<EncoderOptions>().dropout, 0.2);
  EXPECT_EQ(c.get<BowOptions>().min_count, 2);
  EXPECT_EQ(c.get<BowOptions>().bag, "l2");
  EXPECT_EQ(c.get<TransformerOptions>().max_len, 48);
  EXPECT_EQ(c.get<TransformerOptions>().precision, "bf16");
  EXPECT_DOUBLE_EQ(c.get<LossOptions>().temperature, 0.07);
  EXPECT_EQ(c.get<LossOptions>().hardest_k, 7);
  EXPECT_EQ(c.get<NegativesOptions>().kind, "hard");
  EXPECT_EQ(c.get<NegativesOptions>().shortlist, 64);
  EXPECT_EQ(c.get<ClusterBatchOptions>().grow_at, (std::vector<std::int64_t>{3, 6}));
  EXPECT_EQ(c.get<PslOptions>().positives, 2);
  EXPECT_EQ(c.get<PslOptions>().de_head, "normalize");
  EXPECT_DOUBLE_EQ(c.get<UnidecOptions>().lambda, 0.3);
  EXPECT_EQ(c.get<UnidecOptions>().classifier_optimizer, "lazy_adamw");
  EXPECT_DOUBLE_EQ(c.get<NgameOptions>().fusion, 0.4);
  EXPECT_EQ(c.get<IreneOptions>().neighbours, 3);
  // Written back, every stored key keeps its value: runs stored before and after compare. Keys added since
  // (the decoder encoder's, retrieval-augmented inference's) come with their defaults, which change nothing.
  // Keys renamed since (grad_clip, warmup, schedule: now optim.*) keep theirs under the new name.
  const nlohmann::json written = nlohmann::json::parse(to_json(c));
  const nlohmann::json stored = nlohmann::json::parse(kStoredUnidecConfig);
  auto current_name = [](const std::string& key) {
    for (const ConfigKeyInfo& info : train_config_keys())
      if (std::find(info.former_keys.begin(), info.former_keys.end(), key) != info.former_keys.end()) return info.key;
    return key;
  };
  for (const auto& [key, value] : stored.items()) EXPECT_EQ(written.at(current_name(key)), value) << key;
  EXPECT_DOUBLE_EQ(c.get<OptimOptions>().warmup, 0.1);
  EXPECT_EQ(c.get<OptimOptions>().schedule, "cosine");
  EXPECT_FALSE(written.contains("grad_clip"));
  EXPECT_EQ(written.at("encoder.lora.rank"), 16);
  EXPECT_EQ(written.at("rag.use"), "off");
}

TEST(OptionGroups, DefaultsAreTheStructsOwnAndListedOnce) {
  // Independent of the parser: the documented defaults (README, the structs' comments).
  const TrainConfig c;
  EXPECT_EQ(c.get<EncoderOptions>().type, "bow");
  EXPECT_EQ(c.get<EncoderOptions>().dim, 256);
  EXPECT_EQ(c.get<LossOptions>().kind, "decoupled_softmax");
  EXPECT_DOUBLE_EQ(c.get<LossOptions>().temperature, 0.05);
  EXPECT_EQ(c.get<PslOptions>().positives, 3);
  std::map<std::string, int> seen;
  for (const ConfigKeyInfo& info : train_config_keys()) ++seen[info.key];
  for (const auto& [key, count] : seen) EXPECT_EQ(count, 1) << key;
  const auto find = [](const std::string& key) {
    for (const ConfigKeyInfo& info : train_config_keys())
      if (info.key == key) return info;
    ADD_FAILURE() << key;
    return ConfigKeyInfo{};
  };
  EXPECT_EQ(find("temperature").default_value, "0.05");
  EXPECT_EQ(find("psl.positives").default_value, "3");
  EXPECT_EQ(find("encoder.type").default_value, "\"bow\"");
  // A group two methods register (pick-some-labels: UniDEC and DEPSL) is one group that applies to both.
  EXPECT_EQ(find("psl.positives").applies_when, "method=unidec|depsl");
  EXPECT_EQ(find("psl.hard_negatives").applies_when, "method=unidec|depsl;negatives=hard");
  // The transformer encoders share one group: their keys apply to both.
  EXPECT_EQ(find("encoder.max_len").applies_when, "encoder.type=bert|decoder");
  EXPECT_EQ(find("encoder.lora.rank").applies_when, "encoder.type=decoder");
  EXPECT_EQ(find("rag.top").applies_when, "rag.use=on");
  // The choices of `method` and `encoder.type` are the registered components.
  std::vector<std::string> methods;
  for (const MethodInfo& m : registered_method_infos()) methods.push_back(m.name);
  EXPECT_EQ(find("method").choices, methods);
  EXPECT_EQ(methods, (std::vector<std::string>{"dexml", "ngame", "unidec", "depsl", "irene", "xrlinear"}));
  EXPECT_EQ(find("xrlinear.branching").applies_when, "method=xrlinear");
  EXPECT_EQ(find("xrlinear.transform").default_value, "\"l3-hinge\"");
  EXPECT_EQ(find("encoder.type").choices, (std::vector<std::string>{"bow", "bert", "decoder"}));
}

TEST(OptionGroups, ACopyOfAConfigKeepsItsOwnComponentOptions) {
  TrainConfig a;
  apply_config_overrides(a, {"unidec.lambda=0.25", "encoder.dim=64"});
  TrainConfig b = a;
  b.edit<UnidecOptions>().lambda = 0.75;
  apply_config_overrides(b, {"encoder.dim=32"});
  EXPECT_DOUBLE_EQ(a.get<UnidecOptions>().lambda, 0.25);
  EXPECT_EQ(a.get<EncoderOptions>().dim, 64);
  EXPECT_DOUBLE_EQ(b.get<UnidecOptions>().lambda, 0.75);
  EXPECT_EQ(b.get<EncoderOptions>().dim, 32);
  // A component the copy never touched still reads the original's values.
  EXPECT_EQ(nlohmann::json::parse(to_json(b))["unidec.lambda"], 0.75);
  EXPECT_EQ(nlohmann::json::parse(to_json(a))["unidec.lambda"], 0.25);
}

TEST(OptionGroups, AResumedRunMayChangeOnlyWhatDoesNotShapeTheModel) {
  const TrainConfig before = parse_train_config(kStoredUnidecConfig);
  const auto resumed = [&](const std::string& assignment) {
    TrainConfig after = before;
    apply_config_overrides(after, {assignment});
    check_resume_config(before, after);
  };
  EXPECT_NO_THROW(resumed("lr=0.001"));
  EXPECT_NO_THROW(resumed("epochs=20"));
  EXPECT_NO_THROW(resumed("encoder.dropout=0.1"));
  for (const std::string assignment : {"encoder.dim=64", "encoder.type=bert", "method=depsl", "batch_size=256", "dataset=data/other"}) {
    try {
      resumed(assignment);
      ADD_FAILURE() << assignment << " was accepted";
    } catch (const ConfigError& e) {
      const std::string key = assignment.substr(0, assignment.find('='));
      EXPECT_EQ(std::string(e.what()), "resume: " + key + " cannot change when resuming a run (they shape the model or the data it trains on)");
    }
  }
  // UniDEC's own rule: the held-out queries are drawn from the seed.
  EXPECT_THROW(resumed("unidec.concat_holdout=0.2"), ConfigError);
  EXPECT_THROW(resumed("seed=8"), ConfigError);
}

TEST(OptionGroups, EachMethodSaysItsStagesAndMarks) {
  TrainConfig c;
  apply_config_overrides(c, {"method=ngame", "epochs=6", "ngame.m4_epochs=3"});
  EXPECT_EQ(total_epochs(c), 9);
  apply_config_overrides(c, {"method=unidec"});
  EXPECT_EQ(total_epochs(c), 6);  // no later stage
  EXPECT_FALSE(static_cast<bool>(method_info("unidec").base_run));
  apply_config_overrides(c, {"method=irene", "irene.base_run=4"});
  ASSERT_TRUE(static_cast<bool>(method_info("irene").base_run));
  EXPECT_EQ(method_info("irene").base_run(component_config(c)), 4);
  EXPECT_THROW(method_info("svm"), ConfigError);
  // xrlinear trains its rankers in one pass whatever `epochs` says, and has no encoder to name its runs by.
  apply_config_overrides(c, {"method=xrlinear", "epochs=6"});
  EXPECT_EQ(total_epochs(c), 1);
  EXPECT_FALSE(method_info("xrlinear").trains_encoder);
  EXPECT_TRUE(method_info("unidec").trains_encoder);
}

}  // namespace
}  // namespace xmc

namespace xmc {
namespace {

TEST(OptionGroups, KindsOfNegativesAreRegisteredWithWhatTheyDo) {
  EXPECT_TRUE(negatives_kind("hard").draws_from_shortlists);
  EXPECT_FALSE(negatives_kind("hard").scores_every_label);
  EXPECT_TRUE(negatives_kind("all").scores_every_label);
  EXPECT_FALSE(negatives_kind("inbatch").draws_from_shortlists || negatives_kind("inbatch").scores_every_label);
  try {
    negatives_kind("semihard");
    ADD_FAILURE() << "an unknown kind was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("inbatch, hard, all"), std::string::npos) << e.what();
  }
  // The config's choices are the registered kinds, and its help says what each does.
  EXPECT_THROW(parse_train_config(R"({"negatives": "semihard"})"), ConfigError);
  const ConfigKeyInfo* key = find_config_key("negatives");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->choices, (std::vector<std::string>{"inbatch", "hard", "all"}));
  EXPECT_NE(key->description.find("hard, in-batch ones plus hard ones"), std::string::npos) << key->description;
}

TEST(OptionGroups, AStoredConfigIsShownUnderTodaysKeyNames) {
  // A run stored before grad_clip became optim.grad_clip compares with a run stored after it, key for key.
  const auto old_run = flat_run_config(R"({"method": "dexml", "grad_clip": 0.5, "lr": 0.01})");
  const auto new_run = flat_run_config(R"({"method": "dexml", "optim": {"grad_clip": 0.5}, "lr": 0.01})");
  EXPECT_EQ(old_run->count("grad_clip"), 0u);
  EXPECT_EQ(config_value_or(*old_run, "optim.grad_clip"), "0.5");
  EXPECT_EQ(*old_run, *new_run);
  EXPECT_EQ(config_value_or(*old_run, "method"), "dexml");  // strings bare
  // Keys this version does not know are shown as stored; text that is not JSON shows nothing.
  const auto unknown = flat_run_config(R"({"method": "gone", "x": {"y": 2}})");
  EXPECT_EQ(config_value_or(*unknown, "x.y"), "2");
  EXPECT_EQ(config_value_or(*unknown, "method"), "gone");
  EXPECT_TRUE(flat_run_config("{not json")->empty());
  EXPECT_TRUE(flat_run_config(std::string(100000, '[') + std::string(100000, ']'))->empty());  // no stack overflow: refused
  EXPECT_EQ(config_value_or(*unknown, "absent", "—"), "—");
}

TEST(OptionGroups, AFormerKeyNameLoadsUnderItsNewNameWithANotice) {
  ConfigReadNotes notes;
  TrainConfig c = parse_train_config(R"({"grad_clip": 0.5, "deferred_rows_from": 77, "lr": 0.01})", "old script", &notes);
  EXPECT_DOUBLE_EQ(c.get<OptimOptions>().grad_clip, 0.5);
  EXPECT_EQ(c.get<OptimOptions>().deferred_rows_from, 77);
  // (A JSON object's keys are read in name order.)
  ASSERT_EQ(notes.renamed.size(), 2u);
  EXPECT_NE(notes.renamed[0].find("'deferred_rows_from' is now 'optim.deferred_rows_from'"), std::string::npos) << notes.renamed[0];
  EXPECT_NE(notes.renamed[1].find("'grad_clip' is now 'optim.grad_clip'"), std::string::npos) << notes.renamed[1];
  EXPECT_EQ(notes.keys, (std::vector<std::string>{"optim.deferred_rows_from", "optim.grad_clip", "lr"}));
  // --set takes the old names too, and a value out of range is named under the new one.
  apply_config_overrides(c, {"table_first_moment=float32"}, &notes);
  EXPECT_EQ(c.get<OptimOptions>().table_first_moment, "float32");
  EXPECT_EQ(notes.renamed.size(), 3u);
  try {
    apply_config_overrides(c, {"warmup=2"});
    FAIL() << "warmup=2 was taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("optim.warmup"), std::string::npos) << e.what();
  }
}

TEST(OptionGroups, KeysThatDoNotApplyToTheRunAreRefusedByName) {
  TrainConfig bow;
  bow.method = "dexml";
  bow.edit<EncoderOptions>().type = "bow";
  // A tokenizer folder and image fusion matter only for transformer encoders.
  for (const std::string key : {"encoder.tokenizer", "images.max"}) {
    try {
      refuse_inapplicable_keys({"lr", key}, bow);
      FAIL() << key << " was accepted on a bag-of-words run";
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(key + ":", 0), 0u) << message;
      EXPECT_NE(message.find("(this run has encoder.type=bow)"), std::string::npos) << message;
    }
  }
  EXPECT_NO_THROW(refuse_inapplicable_keys({"lr", "encoder.dim", "temperature"}, bow));
  // The margin is the triplet loss's: refused under the default softmax loss, taken once the loss is triplet.
  EXPECT_THROW(refuse_inapplicable_keys({"margin"}, bow), ConfigError);
  bow.edit<LossOptions>().kind = "triplet";
  EXPECT_NO_THROW(refuse_inapplicable_keys({"margin"}, bow));
  // A method without an encoder ignores the encoder's and the optimiser's keys: said, not refused.
  TrainConfig tree;
  tree.method = "xrlinear";
  const std::vector<std::string> ignored = refuse_inapplicable_keys({"epochs", "encoder.dim", "xrlinear.trees"}, tree);
  ASSERT_EQ(ignored.size(), 2u);
  EXPECT_EQ(ignored[0].rfind("epochs does not shape xrlinear runs", 0), 0u) << ignored[0];
}

// hard.search takes eval.index's descriptions of the searches shortlists can use, parameters included; each refusal
// names the key, the text and what is wrong.
TEST(OptionGroups, HardSearchTakesTheEvaluationsSearchDescriptions) {
  const auto parsed = [](const std::string& search, const std::string& more = "") {
    TrainConfig config = parse_train_config(R"({"method": "dexml", "negatives": "hard", "hard.search": ")" + search + "\"" + more + "}");
    check_shortlist_search(config.get<NegativesOptions>());  // what the group's validation runs before a run starts
    return config;
  };
  for (const std::string search : {"auto", "exact", "ivf", "ivf:probe=8", "ivf:probe=8,size=100", "hnsw", "hnsw:M=8,ef=50,efc=40"}) {
    SCOPED_TRACE(search);
    EXPECT_EQ(parsed(search).get<NegativesOptions>().search, search);
  }
  const ShortlistSearchSpec spec = check_shortlist_search(parsed("ivf:probe=8,size=100").get<NegativesOptions>());
  EXPECT_EQ(spec.kind, "ivf");
  EXPECT_EQ(spec.keys, (std::map<std::string, std::int64_t>{{"probe", 8}, {"size", 100}}));
  for (const auto& [search, more, why] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"faiss:Flat", "", "\"faiss:Flat\" ranks evaluations only (eval.index)"},
           {"annoy", "", "\"annoy\" is not a search description"},
           {"ivf:prob=3", "", "has the unknown ivf key \"prob\""},
           {"ivf:probe=0", "", "has probe=0, which is not a positive whole number"},
           {"ivf:probe=4,probe=5", "", "gives probe twice"},
           {"exact:probe=4", "", "takes no parameters"},
           {"ivf:probe=4", R"(, "hard.probe": 32)", "gives probe=4 and hard.probe gives 32: give it once"},
           {"ivf:size=50", R"(, "hard.cluster_size": 80)", "gives size=50 and hard.cluster_size gives 80: give it once"}}) {
    SCOPED_TRACE(search);
    try {
      parsed(search, more);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("hard.search"), std::string::npos) << message;
      EXPECT_NE(message.find(why), std::string::npos) << message;
    }
  }
  // Without parameters, hard.probe and hard.cluster_size say what the inverted file uses.
  EXPECT_NO_THROW(parsed("ivf", R"(, "hard.probe": 32, "hard.cluster_size": 80)"));
}

TEST(OptionGroups, AComponentSeesTheRunContextAndTheOptionsOfTheRunsComponentsOnly) {
  TrainConfig config;
  config.method = "unidec";
  config.seed = 7;
  config.lr = 0.003;
  config.edit<EncoderOptions>().type = "bow";
  config.edit<BowOptions>().min_count = 3;
  config.edit<UnidecOptions>().concat_weight = 0.6;
  const ComponentConfig seen = component_config(config);
  EXPECT_EQ(seen.run.method, "unidec");
  EXPECT_EQ(seen.run.seed, 7u);
  EXPECT_DOUBLE_EQ(seen.run.lr, 0.003);
  EXPECT_DOUBLE_EQ(seen.get<UnidecOptions>().concat_weight, 0.6);
  EXPECT_EQ(seen.get<BowOptions>().min_count, 3);
  EXPECT_NE(seen.find<LossOptions>(), nullptr);
  // Another method's options, another encoder's: not part of this run, refused by name.
  try {
    seen.get<IreneOptions>();
    FAIL() << "a unidec run's component read IRENE's options";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not part of it"), std::string::npos) << e.what();
  }
  EXPECT_EQ(seen.find<TransformerOptions>(), nullptr);
  EXPECT_EQ(seen.find<NgameOptions>(), nullptr);
  // A method that fits without an encoder or an optimiser sees neither's options.
  TrainConfig tree;
  tree.method = "xrlinear";
  const ComponentConfig fitted = component_config(tree);
  EXPECT_EQ(fitted.find<EncoderOptions>(), nullptr);
  EXPECT_EQ(fitted.find<OptimOptions>(), nullptr);
  EXPECT_EQ(fitted.find<UnidecOptions>(), nullptr);
}

TEST(OptionGroups, EveryShippedPresetSetsOnlyKeysThatApply) {
  const std::filesystem::path presets = std::filesystem::path(XMC_SOURCE_DIR) / "datasets" / "configs";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(presets)) {
    if (entry.path().extension() != ".json") continue;
    ConfigReadNotes notes;
    const TrainConfig c = load_train_config(entry.path(), &notes);
    EXPECT_TRUE(notes.renamed.empty()) << entry.path() << ": " << (notes.renamed.empty() ? "" : notes.renamed.front());
    EXPECT_NO_THROW(refuse_inapplicable_keys(notes.keys, c)) << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace xmc
