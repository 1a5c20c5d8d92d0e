// `xmc dataset import mulan|xc-json`, `xmc dataset build wordnet|synthetic|debian`, `xmc dataset info`.
#include <filesystem>
#include <iostream>

#include "engine/cli/command_context.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/zero_shot_split.h"
#include "engine/data/dataset_summary.h"
#include "engine/data/holdout_split.h"
#include "engine/data/mulan_importer.h"
#include "engine/data/debian_packages.h"
#include "engine/data/synthetic_builder.h"
#include "engine/data/wordnet_builder.h"
#include "engine/data/xc_json_importer.h"
#include "engine/text/dataset_featurizer.h"

namespace xmc::cli {
namespace {
namespace fs = std::filesystem;

struct OutputOptions {
  std::string out;
  bool force = false;
  bool json = false;
};

void add_output_options(CLI::App* cmd, OutputOptions& o) {
  cmd->add_option("--out", o.out, "Folder to write the dataset into (created if needed)")->required();
  cmd->add_flag("--force", o.force, "Overwrite a dataset that already exists in --out");
  cmd->add_flag("--json", o.json, "Print the dataset summary as one JSON line at the end");
}

void check_output_folder(const OutputOptions& o) {
  if (!o.force && fs::exists(fs::path(o.out) / dataset_files::kMeta))
    throw ConfigError("--out " + o.out + " already holds a dataset; pass --force to overwrite it");
}

void save_and_report(const Dataset& d, const OutputOptions& o, CommandContext& context) {
  save_dataset(d, o.out);
  const auto summary = summarize_dataset(d);
  if (o.json) {
    context.print_json(nlohmann::json::parse(to_json(summary)));
  } else {
    std::cout << "wrote " << o.out << "\n" << to_text(summary);
  }
}

}  // namespace

void add_dataset_commands(CLI::App& app, CommandContext& context) {
  auto* dataset = app.add_subcommand("dataset", "Import, build and inspect datasets");
  dataset->footer("Examples:\n  xmc dataset build wordnet --out data/wordnet-20k --max-items 20000 --seed 7\n"
                  "  xmc dataset import mulan --train bibtex-train.arff --test bibtex-test.arff --labels bibtex.xml --out data/bibtex\n"
                  "  xmc dataset info data/wordnet-20k");
  dataset->require_subcommand(1);
  auto* import = dataset->add_subcommand("import", "Import a dataset into the canonical folder layout");
  import->footer("Examples:\n  xmc dataset import mulan --train bibtex-train.arff --test bibtex-test.arff --labels bibtex.xml --out data/bibtex\n"
                 "  xmc dataset import xc-json --train trn.json.gz --test tst.json.gz --labels lbl.json.gz --title-only --out data/lfat");
  import->require_subcommand(1);

  // mulan sparse ARFF.
  {
    auto* cmd = import->add_subcommand("mulan", "Import a mulan benchmark (ARFF + labels XML), e.g. Bibtex or Delicious");
    auto opts = std::make_shared<MulanImportOptions>();
    auto out = std::make_shared<OutputOptions>();
    cmd->add_option("--train", opts->train_arff, "Train ARFF file")->required();
    cmd->add_option("--test", opts->test_arff, "Test ARFF file")->required();
    cmd->add_option("--labels", opts->labels_xml, "Labels XML file naming the label attributes")->required();
    cmd->add_option("--name", opts->name, "Dataset name (default: the ARFF @relation)");
    add_output_options(cmd, *out);
    cmd->footer(
        "Example:\n  xmc dataset import mulan --train bibtex-train.arff --test bibtex-test.arff \\\n"
        "      --labels bibtex.xml --out data/bibtex");
    cmd->callback([opts, out, &context] {
      check_output_folder(*out);
      save_and_report(import_mulan(*opts, context.progress), *out, context);
    });
  }
  // Extreme Classification Repository JSON.
  {
    auto* cmd = import->add_subcommand("xc-json", "Import an XC-repository raw-text dataset (trn/tst/lbl .json.gz)");
    auto opts = std::make_shared<XcJsonImportOptions>();
    auto out = std::make_shared<OutputOptions>();
    auto filter = std::make_shared<std::string>();
    cmd->add_option("--train", opts->train, "trn.json.gz")->required();
    cmd->add_option("--test", opts->test, "tst.json.gz")->required();
    cmd->add_option("--labels", opts->labels, "lbl.json.gz")->required();
    cmd->add_option("--filter", *filter, "filter_labels_test.txt to copy along (reciprocal pairs)");
    cmd->add_flag("--title-only", opts->title_only, "Use titles only (the 'Titles' datasets)");
    cmd->add_option("--name", opts->name, "Dataset name (default: the folder of --train)");
    add_output_options(cmd, *out);
    cmd->footer(
        "Example:\n  xmc dataset import xc-json --train LF-AmazonTitles-131K/trn.json.gz \\\n"
        "      --test LF-AmazonTitles-131K/tst.json.gz --labels LF-AmazonTitles-131K/lbl.json.gz \\\n"
        "      --filter LF-AmazonTitles-131K/filter_labels_test.txt --title-only --out data/lfat131k");
    cmd->callback([opts, out, filter, &context] {
      check_output_folder(*out);
      Dataset d = import_xc_json(*opts, context.progress);
      if (!filter->empty()) d.test_filter = read_filter_pairs(*filter, d.num_test(), d.num_labels());
      save_and_report(d, *out, context);
    });
  }
  // WordNet taxonomy builder.
  {
    auto* build = dataset->add_subcommand("build", "Build a dataset from a local resource");
    build->footer("Example:\n  xmc dataset build wordnet --out data/wordnet-20k --max-items 20000 --seed 7");
    build->require_subcommand(1);
    auto* cmd = build->add_subcommand("wordnet", "Noun-hypernym taxonomy completion from Debian's wordnet-base");
    auto opts = std::make_shared<WordnetBuildOptions>();
    auto out = std::make_shared<OutputOptions>();
    cmd->add_option("--max-items", opts->max_items, "Sample this many noun synsets (0 = all)")->check(CLI::NonNegativeNumber);
    cmd->add_option("--seed", opts->seed, "Seed of the sample and of the 70/30 split");
    cmd->add_option("--data-noun", opts->data_noun, "WordNet data.noun file")->capture_default_str();
    cmd->add_option("--labels", opts->labels,
                    "ancestors: every hypernym up to the root (the root is then a label of every item: P@1 says little); "
                    "direct: the direct hypernyms only")
        ->check(CLI::IsMember({"ancestors", "direct"}))
        ->capture_default_str();
    cmd->add_option("--min-depth", opts->min_depth,
                    "Synsets fewer than this many hypernym steps below a root are not labels (entity is 0, physical entity 1); "
                    "items left without a label are left out")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    add_output_options(cmd, *out);
    cmd->footer("Examples:\n  xmc dataset build wordnet --out data/wordnet-20k --max-items 20000 --seed 7\n"
                "  xmc dataset build wordnet --out data/wordnet-direct --max-items 20000 --labels direct --min-depth 3");
    cmd->callback([opts, out, &context] {
      check_output_folder(*out);
      save_and_report(build_wordnet_dataset(*opts, context.progress), *out, context);
    });
  }
  // Shaped synthetic sets, for measuring scale.
  {
    auto* build = dataset->get_subcommand("build");
    auto* cmd = build->add_subcommand("synthetic", "A synthetic set shaped like the XC repository's LF sets, at any size, from a seed");
    auto opts = std::make_shared<SyntheticBuildOptions>();
    auto out = std::make_shared<OutputOptions>();
    cmd->add_option("--labels", opts->labels, "Labels")->capture_default_str();
    cmd->add_option("--train", opts->train, "Training queries")->capture_default_str();
    cmd->add_option("--test", opts->test, "Test queries")->capture_default_str();
    cmd->add_option("--labels-per-query", opts->labels_per_query, "Mean labels of a query (LF-AmazonTitles-131K: 2.3, -1.3M: 22)")->capture_default_str();
    cmd->add_option("--label-words", opts->label_words, "Words of a label's text")->capture_default_str();
    cmd->add_option("--query-words", opts->query_words, "Words of a query's text, at least")->capture_default_str();
    cmd->add_option("--vocabulary", opts->vocabulary, "Made-up words (0 = max(2000, 2 x labels))")->capture_default_str();
    cmd->add_option("--zipf", opts->zipf, "Label popularity: a label of popularity rank r is drawn with probability ~ 1/r^zipf")->capture_default_str();
    cmd->add_option("--topics", opts->topics,
                    "Label topics: labels of a topic share words and a query's labels are often of one topic, as in real sets "
                    "(approximate search needs such neighbourhoods); 0 = none")
        ->capture_default_str();
    cmd->add_option("--image-dim", opts->image_dim,
                    "Also image banks of m numbers per item: a second view the texts lack (twin labels told apart by their images only); 0 = none")
        ->capture_default_str();
    cmd->add_option("--seed", opts->seed, "Seed (the same seed gives the same files on every machine)")->capture_default_str();
    add_output_options(cmd, *out);
    cmd->footer("Examples:\n  xmc dataset build synthetic --labels 30000 --train 50000 --test 10000 --out data/synthetic-30k\n"
                "  xmc dataset build synthetic --labels 1300000 --train 2250000 --test 970000 --labels-per-query 22 --topics 20000 --out data/synthetic-1.3m\n"
                "  xmc dataset build synthetic --labels 2000 --train 20000 --test 4000 --labels-per-query 1.5 --image-dim 64 --out data/two-views");
    cmd->callback([opts, out, &context] {
      check_output_folder(*out);
      save_and_report(build_synthetic_dataset(*opts, context.progress), *out, context);
    });
  }
  // Debian's package index: short, punctuation-heavy texts with their debtags.
  {
    auto* build = dataset->get_subcommand("build");
    auto* cmd = build->add_subcommand("debian", "Debian's packages (name and synopsis) with their debtags or sections, from a package index");
    auto opts = std::make_shared<DebianBuildOptions>();
    auto out = std::make_shared<OutputOptions>();
    cmd->add_option("--packages", opts->packages, "A package index in deb822 form, e.g. the output of `apt-cache dumpavail`")->required()->check(CLI::ExistingFile);
    cmd->add_option("--labels", opts->labels, "tags: each package's debtags (facet::tag); section: its archive section")
        ->check(CLI::IsMember({"tags", "section"}))
        ->capture_default_str();
    cmd->add_option("--min-label-count", opts->min_label_count, "Labels on fewer training packages are dropped")->capture_default_str();
    cmd->add_option("--test-fraction", opts->test_fraction, "Share of the labelled packages in the test split")->capture_default_str();
    cmd->add_option("--max-items", opts->max_items, "A seeded sample of the labelled packages (0 = all)")->capture_default_str();
    cmd->add_option("--seed", opts->seed, "Seed of the sample and of the split")->capture_default_str();
    add_output_options(cmd, *out);
    cmd->footer("Example:\n  apt-cache dumpavail > packages.txt\n  xmc dataset build debian --packages packages.txt --out data/debian-tags");
    cmd->callback([opts, out, &context] {
      check_output_folder(*out);
      save_and_report(build_debian_dataset(*opts, context.progress), *out, context);
    });
  }
  // Zero-shot split (novel labels without training points; pseudo-novel ones to select a generator on).
  {
    auto* cmd = dataset->add_subcommand("split-zeroshot", "Make a zero-shot split: a fraction of labels becomes novel (no training points)");
    auto opts = std::make_shared<ZeroShotSplitOptions>();
    auto in = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("--in", *in, "Dataset folder to split")->required();
    cmd->add_option("--out", *out, "New folder for the split")->required();
    cmd->add_option("--novel-frac", opts->novel_frac, "Fraction of labels made novel (drawn among labels with a test positive)")
        ->capture_default_str();
    cmd->add_option("--val-frac", opts->val_frac,
                    "Fraction of labels withheld from base training as pseudo-novel, to train and select a generator on")
        ->capture_default_str();
    cmd->add_option("--seed", opts->seed, "Seed of the draw")->capture_default_str();
    cmd->add_flag("--json", *json, "Print the split's counts as one JSON line");
    cmd->footer("Example:\n  xmc dataset split-zeroshot --in data/wordnet-60k --out data/wordnet-60k-zs --novel-frac 0.1 --val-frac 0.02 --seed 0");
    cmd->callback([opts, in, out, json, &context] {
      opts->in = *in;
      opts->out = *out;
      const ZeroShotSplitSummary s = split_zero_shot(*opts, context.progress);
      const nlohmann::json j{{"labels", s.labels},
                             {"novel", s.novel},
                             {"pseudo_novel", s.pseudo_novel},
                             {"zero_shot_test_rows", s.zero_shot_test_rows},
                             {"train_rows_without_labels", s.train_rows_without_labels}};
      if (*json) {
        context.print_json(j);
      } else {
        std::cout << "wrote " << *out << ": " << s.novel << " novel and " << s.pseudo_novel << " pseudo-novel of " << s.labels << " labels; "
                  << s.zero_shot_test_rows << " test rows have a novel positive (tst_X_Y_zero.txt); " << s.train_rows_without_labels
                  << " train rows kept no observed label\n";
      }
    });
  }
  // A development split: training queries held out, to choose values on without the test split.
  {
    auto* cmd = dataset->add_subcommand("split-holdout",
                                        "Make a development set: some training queries held out as its test split (choose values there, not on the test split)");
    auto opts = std::make_shared<HoldoutSplitOptions>();
    auto in = std::make_shared<std::string>();
    auto out = std::make_shared<OutputOptions>();
    cmd->add_option("--in", *in, "Dataset folder whose training queries are split")->required();
    add_output_options(cmd, *out);
    cmd->add_option("--fraction", opts->fraction, "Fraction of the training queries held out as the new test split")->capture_default_str();
    cmd->add_option("--seed", opts->seed, "Seed of the draw")->capture_default_str();
    cmd->footer("Example:\n  xmc dataset split-holdout --in data/wordnet-direct --out data/wordnet-direct-dev --fraction 0.2 --seed 0");
    cmd->callback([opts, in, out, &context] {
      std::error_code error;
      if (std::filesystem::equivalent(*in, out->out, error))
        throw ConfigError("--out " + out->out + " is the dataset being split: give a new folder");
      check_output_folder(*out);
      save_and_report(holdout_split(load_dataset(*in, {}, context.progress), *opts), *out, context);
    });
  }
  // Tf-idf features stored with the dataset.
  {
    auto* cmd = dataset->add_subcommand("featurize", "Write tf-idf features of a dataset's texts (vocabulary fit on its training queries) into DIR/features");
    auto dir = std::make_shared<std::string>();
    auto options = std::make_shared<TfidfOptions>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("DIR", *dir, "Dataset folder")->required();
    cmd->add_option("--ngrams", options->ngrams, "Word n-grams from 1 to this many words")->check(CLI::Range(1, 3))->capture_default_str();
    cmd->add_option("--min-df", options->min_df, "Keep n-grams found in at least this many training queries (longer n-grams: at least 2)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cmd->add_option("--max-features", options->max_features, "Keep at most this many features, those in most training queries (0 = all)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    cmd->add_flag("--json", *json, "Print one JSON object as the last line");
    cmd->footer("Example:\n  xmc dataset featurize data/wordnet-direct --ngrams 2\n"
                "  xmc train --set method=xrlinear --set xrlinear.features=dataset --set dataset=data/wordnet-direct");
    cmd->callback([dir, options, json, &context] {
      const FeaturizeSummary s = featurize_dataset(*dir, *options, context.progress);
      if (*json) {
        context.print_json(nlohmann::json{{"features", s.features}, {"texts", s.texts}, {"nnz", s.nnz}, {"seconds", s.seconds}});
      } else {
        std::cout << "wrote " << (std::filesystem::path(*dir) / "features").string() << ": " << s.features << " tf-idf features, " << s.texts
                  << " texts, " << s.nnz << " non-zeros, in " << s.seconds << " s\n";
      }
    });
  }
  // Summary statistics.
  {
    auto* cmd = dataset->add_subcommand("info", "Print the statistics of a dataset folder");
    auto dir = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("DIR", *dir, "Dataset folder")->required();
    cmd->add_flag("--json", *json, "Print one JSON object instead of a table");
    cmd->footer("Example:\n  xmc dataset info data/wordnet-20k --json");
    cmd->callback([dir, json, &context] {
      const Dataset d = load_dataset(*dir, {.load_features = true}, context.progress);
      const auto summary = summarize_dataset(d);
      if (*json) context.print_json(nlohmann::json::parse(to_json(summary)));
      else std::cout << to_text(summary);
    });
  }
}

}  // namespace xmc::cli
