#include "engine/data/wordnet_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/support/recording_progress.h"

namespace xmc {
namespace {
namespace fs = std::filesystem;
using Names = std::set<std::string>;

// A hand-made data.noun in wndb(5) format: two-space license header lines, 8-digit decimal offsets,
// 2-digit hex word counts, 3-digit decimal pointer counts, trailing double spaces as in the real file.
// Hierarchy (@ = hypernym, @i = instance hypernym):
//   entity
//   ├── physical_entity ── organism ── animal ─┬─ domestic_animal ─┐
//   │                                          ├─ canine ──────────┴─ dog ──(@i)── Lassie
//   │                                          └─ cat
//   └── abstraction ── idea
// dog has two hypernyms; non-hypernym pointers (~, ~i, #m, +, ;c) are to be ignored. The cat line is
// out of offset order on purpose.
constexpr const char* kFixture =
    "  1 This software and database is being provided to you, the LICENSEE, by  \n"
    "  2 Princeton University under the following license.  \n"
    "  3   \n"
    "00000010 03 n 01 entity 0 002 ~ 00000020 n 0000 ~ 00000030 n 0000 | that which is perceived to have its own "
    "distinct existence  \n"
    "00000020 03 n 01 physical_entity 0 002 @ 00000010 n 0000 ~ 00000050 n 0000 | an entity that has physical "
    "existence  \n"
    "00000030 03 n 02 abstraction 0 abstract_entity 0 002 @ 00000010 n 0000 ~ 00000040 n 0000 | a general concept "
    "formed by extracting common features  \n"
    "00000040 09 n 02 idea 0 thought 0 002 @ 00000030 n 0000 ;c 00000030 n 0000 | the content of cognition  \n"
    "00000050 03 n 02 organism 0 being 0 002 @ 00000020 n 0000 ~ 00000060 n 0000 | a living thing that can act "
    "or function independently  \n"
    "00000060 05 n 03 animal 0 animate_being 0 beast 0 004 @ 00000050 n 0000 + 01617210 v 0502 ~ 00000070 n 0000 "
    "~ 00000080 n 0000 | a living organism characterized by voluntary movement  \n"
    "00000070 05 n 02 domestic_animal 0 domesticated_animal 0 002 @ 00000060 n 0000 ~ 00000090 n 0000 | any of "
    "various animals that have been tamed  \n"
    "00000080 05 n 02 canine 0 canid 0 002 @ 00000060 n 0000 ~ 00000090 n 0000 | any of various fissiped mammals "
    "with nonretractile claws  \n"
    "00000090 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 004 @ 00000080 n 0000 @ 00000070 n 0000 "
    "~i 00000100 n 0000 #m 00000080 n 0000 | a member of the genus Canis; \"the dog barked all night\"  \n"
    "00000110 05 n 02 cat 0 true_cat 0 002 @ 00000060 n 0000 + 01234567 v 0101 | feline mammal usually having "
    "thick soft fur  \n"
    "00000100 18 n 01 Lassie 0 001 @i 00000090 n 0000 | a fictional collie  \n";

// Synsets in offset order, with the texts the builder must produce.
const std::vector<std::pair<std::string, std::string>> kTexts = {
    {"entity", "entity: that which is perceived to have its own distinct existence"},
    {"physical_entity", "physical entity: an entity that has physical existence"},
    {"abstraction", "abstraction, abstract entity: a general concept formed by extracting common features"},
    {"idea", "idea, thought: the content of cognition"},
    {"organism", "organism, being: a living thing that can act or function independently"},
    {"animal", "animal, animate being, beast: a living organism characterized by voluntary movement"},
    {"domestic_animal", "domestic animal, domesticated animal: any of various animals that have been tamed"},
    {"canine", "canine, canid: any of various fissiped mammals with nonretractile claws"},
    {"dog", "dog, domestic dog, Canis familiaris: a member of the genus Canis; \"the dog barked all night\""},
    {"Lassie", "Lassie: a fictional collie"},
    {"cat", "cat, true cat: feline mammal usually having thick soft fur"},
};

// Hand-worked transitive ancestors of every item (every synset but the root).
const std::map<std::string, Names> kAncestors = {
    {"physical_entity", {"entity"}},
    {"abstraction", {"entity"}},
    {"idea", {"abstraction", "entity"}},
    {"organism", {"physical_entity", "entity"}},
    {"animal", {"organism", "physical_entity", "entity"}},
    {"domestic_animal", {"animal", "organism", "physical_entity", "entity"}},
    {"canine", {"animal", "organism", "physical_entity", "entity"}},
    {"dog", {"canine", "domestic_animal", "animal", "organism", "physical_entity", "entity"}},
    {"Lassie", {"dog", "canine", "domestic_animal", "animal", "organism", "physical_entity", "entity"}},
    {"cat", {"animal", "organism", "physical_entity", "entity"}},
};

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("xmc_wordnet_test_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& content) const {
    const fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  fs::path path_;
};

std::string name_of(const std::string& text) {
  for (const auto& [name, t] : kTexts)
    if (t == text) return name;
  ADD_FAILURE() << "unexpected text: " << text;
  return "?";
}

std::size_t offset_rank(const std::string& name) {
  for (std::size_t i = 0; i < kTexts.size(); ++i)
    if (kTexts[i].first == name) return i;
  ADD_FAILURE() << "unknown synset " << name;
  return 0;
}

void expect_well_formed(const CsrMatrix& m) {
  ASSERT_EQ(m.indptr.size(), static_cast<std::size_t>(m.rows + 1));
  ASSERT_EQ(m.indices.size(), m.values.size());
  for (std::int64_t r = 0; r < m.rows; ++r) {
    const auto row = m.row_indices(r);
    for (std::size_t i = 0; i < row.size(); ++i) {
      EXPECT_GE(row[i], 0);
      EXPECT_LT(row[i], m.cols);
      if (i > 0) {
        EXPECT_LT(row[i - 1], row[i]) << "row " << r << " not sorted/unique";
      }
    }
    for (const float v : m.row_values(r)) EXPECT_EQ(v, 1.0f);
  }
}

Names row_names(const Dataset& d, const CsrMatrix& m, std::int64_t row) {
  Names out;
  for (const std::int32_t l : m.row_indices(row)) out.insert(name_of(d.label_text[static_cast<std::size_t>(l)]));
  return out;
}

/// Checks every invariant of a built fixture dataset against the hand-worked tables.
void check_against_hand_tables(const Dataset& d, std::size_t expected_items) {
  SCOPED_TRACE(d.meta.source);
  ASSERT_EQ(d.train_text.size(), static_cast<std::size_t>(d.num_train()));
  ASSERT_EQ(d.test_text.size(), static_cast<std::size_t>(d.num_test()));
  ASSERT_EQ(d.label_text.size(), static_cast<std::size_t>(d.num_labels()));
  ASSERT_EQ(d.test_labels.cols, d.num_labels());
  const auto n_train = static_cast<std::size_t>(std::llround(0.7 * static_cast<double>(expected_items)));
  EXPECT_EQ(d.train_text.size(), n_train);
  EXPECT_EQ(d.test_text.size(), expected_items - n_train);
  expect_well_formed(d.train_labels);
  expect_well_formed(d.test_labels);

  // Items: distinct, never the root, train and test disjoint, each split in offset order.
  Names train_items, test_items;
  std::vector<std::size_t> ranks;
  for (const auto& t : d.train_text) ranks.push_back(offset_rank(name_of(t)));
  EXPECT_TRUE(std::is_sorted(ranks.begin(), ranks.end()));
  ranks.clear();
  for (const auto& t : d.test_text) ranks.push_back(offset_rank(name_of(t)));
  EXPECT_TRUE(std::is_sorted(ranks.begin(), ranks.end()));
  for (const auto& t : d.train_text) train_items.insert(name_of(t));
  for (const auto& t : d.test_text) test_items.insert(name_of(t));
  EXPECT_EQ(train_items.size() + test_items.size(), expected_items);
  EXPECT_FALSE(train_items.contains("entity"));
  EXPECT_FALSE(test_items.contains("entity"));
  for (const auto& n : train_items) EXPECT_FALSE(test_items.contains(n)) << n;

  // Labels = union of the train items' ancestors, in offset order, each named once.
  Names expected_labels;
  for (const auto& n : train_items) expected_labels.insert(kAncestors.at(n).begin(), kAncestors.at(n).end());
  Names labels;
  std::vector<std::size_t> label_ranks;
  for (const auto& t : d.label_text) {
    labels.insert(name_of(t));
    label_ranks.push_back(offset_rank(name_of(t)));
  }
  EXPECT_EQ(labels, expected_labels);
  EXPECT_EQ(labels.size(), d.label_text.size());
  EXPECT_TRUE(std::is_sorted(label_ranks.begin(), label_ranks.end()));
  for (const auto c : d.label_frequencies()) EXPECT_GT(c, 0) << "a label no train point has";

  // Rows: train = exact ancestor set; test = ancestors that are labels.
  for (std::int64_t r = 0; r < d.num_train(); ++r)
    EXPECT_EQ(row_names(d, d.train_labels, r), kAncestors.at(name_of(d.train_text[static_cast<std::size_t>(r)])));
  std::vector<FilterPair> expected_filter;
  for (std::int64_t r = 0; r < d.num_test(); ++r) {
    const std::string& query = d.test_text[static_cast<std::size_t>(r)];
    Names expected;
    for (const auto& a : kAncestors.at(name_of(query)))
      if (labels.contains(a)) expected.insert(a);
    EXPECT_EQ(row_names(d, d.test_labels, r), expected);
    // Reciprocal pair: the item's own synset is a label (with the query's text).
    const auto it = std::find(d.label_text.begin(), d.label_text.end(), query);
    if (it != d.label_text.end()) expected_filter.push_back({r, static_cast<std::int32_t>(it - d.label_text.begin())});
  }
  EXPECT_EQ(d.test_filter.pairs(), expected_filter);
}

Dataset build_fixture(const TempDir& dir, std::uint64_t seed = 7, std::int64_t max_items = 0) {
  WordnetBuildOptions o;
  o.data_noun = dir.path() / "data.noun";
  if (!fs::exists(o.data_noun)) dir.write("data.noun", kFixture);
  o.seed = seed;
  o.max_items = max_items;
  return build_wordnet_dataset(o);
}

TEST(WordnetBuilder, SynsetTextFormat) {
  EXPECT_EQ(wordnet_synset_text({"dog", "domestic_dog", "Canis_familiaris"}, "a member of the genus Canis"),
            "dog, domestic dog, Canis familiaris: a member of the genus Canis");
  EXPECT_EQ(wordnet_synset_text({"entity"}, ""), "entity");
}

TEST(WordnetBuilder, FixtureLabelsAreExactAncestorSets) {
  TempDir dir;
  const Dataset d = build_fixture(dir);
  check_against_hand_tables(d, 10);
  EXPECT_EQ(d.num_train(), 7);
  EXPECT_EQ(d.num_test(), 3);
}

TEST(WordnetBuilder, LabelTextAndDogRow) {
  TempDir dir;
  // Whichever split dog lands in, its row (with every ancestor a label when it is in train) is checked
  // by text; find a seed that puts dog in train to check the full two-parent closure by text.
  bool seen = false;
  for (std::uint64_t seed = 1; seed <= 20 && !seen; ++seed) {
    const Dataset d = build_fixture(dir, seed);
    const auto it = std::find(d.train_text.begin(), d.train_text.end(), kTexts[8].second);
    if (it == d.train_text.end()) continue;
    seen = true;
    std::vector<std::string> texts;
    for (const auto l : d.train_labels.row_indices(it - d.train_text.begin()))
      texts.push_back(d.label_text[static_cast<std::size_t>(l)]);
    const std::vector<std::string> expected = {
        "entity: that which is perceived to have its own distinct existence",
        "physical entity: an entity that has physical existence",
        "organism, being: a living thing that can act or function independently",
        "animal, animate being, beast: a living organism characterized by voluntary movement",
        "domestic animal, domesticated animal: any of various animals that have been tamed",
        "canine, canid: any of various fissiped mammals with nonretractile claws",
    };
    EXPECT_EQ(texts, expected);  // offset order
  }
  EXPECT_TRUE(seen);
}

TEST(WordnetBuilder, LabelsOnlyFromTrainAcrossSeeds) {
  TempDir dir;
  int idea_in_test = 0, idea_in_train = 0, with_filter = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Dataset d = build_fixture(dir, seed);
    check_against_hand_tables(d, 10);
    const bool abstraction_is_label =
        std::find(d.label_text.begin(), d.label_text.end(), kTexts[2].second) != d.label_text.end();
    const bool idea_train = std::find(d.train_text.begin(), d.train_text.end(), kTexts[3].second) != d.train_text.end();
    // abstraction is an ancestor of idea only: a label exactly when idea is a train item.
    EXPECT_EQ(abstraction_is_label, idea_train) << "seed " << seed;
    (idea_train ? idea_in_train : idea_in_test)++;
    if (!idea_train) {
      const auto it = std::find(d.test_text.begin(), d.test_text.end(), kTexts[3].second);
      ASSERT_NE(it, d.test_text.end());
      EXPECT_EQ(row_names(d, d.test_labels, it - d.test_text.begin()), Names{"entity"});
    }
    if (!d.test_filter.empty()) ++with_filter;
  }
  EXPECT_GT(idea_in_test, 0);
  EXPECT_GT(idea_in_train, 0);
  EXPECT_GT(with_filter, 0);
}

TEST(WordnetBuilder, ReciprocalPairsFiltered) {
  TempDir dir;
  // Find a seed where animal (an ancestor of 4 other items, so nearly always a label) is a test item.
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Dataset d = build_fixture(dir, seed);
    const auto it = std::find(d.test_text.begin(), d.test_text.end(), kTexts[5].second);
    if (it == d.test_text.end()) continue;
    const auto lt = std::find(d.label_text.begin(), d.label_text.end(), kTexts[5].second);
    ASSERT_NE(lt, d.label_text.end());
    const auto row = static_cast<std::int64_t>(it - d.test_text.begin());
    EXPECT_EQ(d.test_filter.labels_of(row), std::vector<std::int32_t>{static_cast<std::int32_t>(lt - d.label_text.begin())});
    // The filtered label is not a positive of that row.
    for (const auto l : d.test_labels.row_indices(row)) EXPECT_NE(l, lt - d.label_text.begin());
    return;
  }
  FAIL() << "no seed in 1..40 put animal in the test set";
}

TEST(WordnetBuilder, Deterministic) {
  TempDir dir;
  const Dataset a = build_fixture(dir, 7), b = build_fixture(dir, 7);
  EXPECT_EQ(a.train_text, b.train_text);
  EXPECT_EQ(a.test_text, b.test_text);
  EXPECT_EQ(a.label_text, b.label_text);
  EXPECT_EQ(a.train_labels.indptr, b.train_labels.indptr);
  EXPECT_EQ(a.train_labels.indices, b.train_labels.indices);
  EXPECT_EQ(a.test_labels.indptr, b.test_labels.indptr);
  EXPECT_EQ(a.test_labels.indices, b.test_labels.indices);
  EXPECT_EQ(a.test_filter.pairs(), b.test_filter.pairs());
  int different = 0;
  for (std::uint64_t seed = 8; seed <= 12; ++seed)
    if (build_fixture(dir, seed).train_text != a.train_text) ++different;
  EXPECT_GE(different, 4);  // 120 possible splits: at most a coincidence or so
}

TEST(WordnetBuilder, SampledBuild) {
  TempDir dir;
  const Dataset d = build_fixture(dir, 7, 5);
  check_against_hand_tables(d, 5);  // 5 items: round(3.5) = 4 train, 1 test
  EXPECT_EQ(d.num_train(), 4);
  EXPECT_EQ(d.num_test(), 1);
  EXPECT_EQ(d.meta.name, "wordnet-nouns-5");
  EXPECT_EQ(d.meta.source, "WordNet 3.0 noun hypernyms (wordnet-base), 5 items, seed 7");
  const Dataset again = build_fixture(dir, 7, 5);
  EXPECT_EQ(again.train_text, d.train_text);
  EXPECT_EQ(again.test_text, d.test_text);
  int different = 0;
  for (std::uint64_t seed = 8; seed <= 12; ++seed) {
    const Dataset other = build_fixture(dir, seed, 5);
    check_against_hand_tables(other, 5);
    if (other.train_text != d.train_text || other.test_text != d.test_text) ++different;
  }
  EXPECT_GE(different, 4);
  // More than there are: everything, and not called sampled.
  const Dataset all = build_fixture(dir, 7, 1000);
  check_against_hand_tables(all, 10);
  EXPECT_EQ(all.meta.name, "wordnet-nouns");
}

TEST(WordnetBuilder, Meta) {
  TempDir dir;
  const Dataset d = build_fixture(dir, 42);
  EXPECT_EQ(d.meta.name, "wordnet-nouns");
  EXPECT_EQ(d.meta.source, "WordNet 3.0 noun hypernyms (wordnet-base), 10 items, seed 42");
  EXPECT_DOUBLE_EQ(d.meta.propensity.a, 0.55);
  EXPECT_DOUBLE_EQ(d.meta.propensity.b, 1.5);
}

TEST(WordnetBuilder, HexWordCount) {
  TempDir dir;
  WordnetBuildOptions o;
  // 0b = 11 words (a decimal reading would stop at the lex_id/pointer count boundary).
  o.data_noun = dir.write("data.noun",
                          "  header  \n"
                          "00000010 03 n 01 root 0 000 | the top  \n"
                          "00000020 03 n 0b w1 0 w2 0 w3 0 w4 0 w5 0 w6 0 w7 0 w8 0 w9 0 w10 0 w_11 1 001 "
                          "@ 00000010 n 0000 | many names  \n");
  o.train_fraction = 1.0;
  const Dataset d = build_wordnet_dataset(o);
  ASSERT_EQ(d.num_train(), 1);
  EXPECT_EQ(d.train_text[0], "w1, w2, w3, w4, w5, w6, w7, w8, w9, w10, w 11: many names");
  EXPECT_EQ(d.label_text, std::vector<std::string>{"root: the top"});
  EXPECT_EQ(d.num_test(), 0);
}

struct BadLine {
  std::string line;
  std::string reason;  ///< expected substring of the message
};

TEST(WordnetBuilder, MalformedLinesNamePathAndLine) {
  const std::vector<BadLine> cases = {
      {"00000020 03 n 0g a 0 001 @ 00000010 n 0000 | x", "word count '0g'"},
      {"00000020 03 n 10 a 0 b 0 001 @ 00000010 n 0000 | x", "is the word count 16 right?"},
      {"00000020 03 n 01 a 0 1x @ 00000010 n 0000 | x", "pointer count '1x'"},
      {"00000020 03 n 01 a 0 002 @ 00000010 n 0000 | x", "pointer 2 of 2 is incomplete"},
      {"00000020 03 n 01 a 0 000 @ 00000010 n 0000 | x", "unexpected '@' after the 0 pointers"},
      {"00000020 03 n 01 a 0 001 @ 00000099 n 0000 | x", "synset offset 99, which is not in the file"},
      {"00000020 03 n 01 a 0 001 @ 00000010 n 00x0 | x", "source/target '00x0'"},
      {"00000020 03 n 01 a 0 001 @ 00000010 q 0000 | x", "part of speech 'q'"},
      {"00000020 03 n 01 a 0 001 @ 00000010 n 0000", "gloss"},
      {"00000020 03 v 01 a 0 001 @ 00000010 n 0000 | x", "not a noun"},
      {"0000002x 03 n 01 a 0 001 @ 00000010 n 0000 | x", "synset offset '0000002x'"},
      {"00000020 03 n 00 001 @ 00000010 n 0000 | x", "word count is 0"},
      {"00000010 03 n 01 a 0 000 | duplicate", "duplicate synset offset 10 (also on line 3)"},
      {"00000020 03 n 01 a 0 002 @ 00000010 n 0000 @ 00000020 n 0000 | x", "hypernym cycle"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    TempDir dir;
    const fs::path path = dir.write("data.noun", "  license  \n  more license  \n00000010 03 n 01 root 0 000 | top  \n" +
                                                     c.line + "  \n00000030 03 n 01 z 0 001 @ 00000010 n 0000 | z  \n");
    WordnetBuildOptions o;
    o.data_noun = path;
    try {
      build_wordnet_dataset(o);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path.string() + ":4:"), std::string::npos) << what;
      EXPECT_NE(what.find(c.reason), std::string::npos) << what;
      EXPECT_EQ(e.line(), 4u);
    }
  }
}

TEST(WordnetBuilder, MissingFileSaysInstallWordnetBase) {
  TempDir dir;
  WordnetBuildOptions o;
  o.data_noun = dir.path() / "no" / "data.noun";
  try {
    build_wordnet_dataset(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(o.data_noun.string()), std::string::npos) << what;
    EXPECT_NE(what.find("apt-get install wordnet-base"), std::string::npos) << what;
  }
}

TEST(WordnetBuilder, EmptyAndRootOnlyFilesAreErrors) {
  TempDir dir;
  WordnetBuildOptions o;
  o.data_noun = dir.write("data.noun", "  only a license  \n");
  EXPECT_THROW(build_wordnet_dataset(o), InputError);
  o.data_noun = dir.write("data.noun", "00000010 03 n 01 root 0 000 | top  \n");
  EXPECT_THROW(build_wordnet_dataset(o), InputError);
}

TEST(WordnetBuilder, BadOptions) {
  TempDir dir;
  WordnetBuildOptions o;
  o.data_noun = dir.write("data.noun", kFixture);
  o.max_items = -1;
  EXPECT_THROW(build_wordnet_dataset(o), ConfigError);
  o.max_items = 0;
  o.train_fraction = 0.0;
  EXPECT_THROW(build_wordnet_dataset(o), ConfigError);
  o.train_fraction = 1.5;
  EXPECT_THROW(build_wordnet_dataset(o), ConfigError);
}

using test::RecordingProgress;

TEST(WordnetBuilder, ReportsProgressAndHonoursCancel) {
  TempDir dir;
  WordnetBuildOptions o;
  o.data_noun = dir.write("data.noun", kFixture);
  RecordingProgress p;
  build_wordnet_dataset(o, p);
  EXPECT_FALSE(p.open);
  EXPECT_EQ(p.tasks.size(), 3u);
  EXPECT_GE(p.updates, 3);
  RecordingProgress cancelling;
  cancelling.cancel = true;
  EXPECT_THROW(build_wordnet_dataset(o, cancelling), Cancelled);
}

// ---- The real WordNet 3.0 from Debian's wordnet-base -------------------------------------------

const fs::path kRealDataNoun = "/usr/share/wordnet/data.noun";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(WordnetBuilderReal, FullBuildHasAllNonRootNounSynsets) {
  if (!fs::exists(kRealDataNoun)) GTEST_SKIP() << kRealDataNoun << " absent (apt-get install wordnet-base)";
  // Independent count: data lines, and roots = lines with no '@'/'@i' pointer before the gloss.
  std::ifstream in(kRealDataNoun);
  std::string line;
  std::int64_t data_lines = 0, roots = 0;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) == 0) continue;
    ++data_lines;
    const std::string head = line.substr(0, line.find('|'));
    if (head.find(" @ ") == std::string::npos && head.find(" @i ") == std::string::npos) ++roots;
  }
  EXPECT_EQ(data_lines, 82115);  // WordNet 3.0: 82,115 noun synsets
  EXPECT_EQ(roots, 1);           // just `entity`

  WordnetBuildOptions o;
  o.data_noun = kRealDataNoun;
  const auto t0 = std::chrono::steady_clock::now();
  const Dataset d = build_wordnet_dataset(o);
  const double secs = seconds_since(t0);
  EXPECT_EQ(d.num_train() + d.num_test(), data_lines - roots);
  EXPECT_EQ(d.num_train(), std::llround(0.7 * static_cast<double>(data_lines - roots)));
  EXPECT_EQ(d.meta.name, "wordnet-nouns");
  expect_well_formed(d.train_labels);
  expect_well_formed(d.test_labels);
  std::cout << "[ wordnet  ] full build: " << secs << " s, train " << d.num_train() << ", test " << d.num_test()
            << ", labels " << d.num_labels() << ", train nnz " << d.train_labels.nnz() << ", test nnz "
            << d.test_labels.nnz() << ", filter pairs " << d.test_filter.size() << "\n";
  EXPECT_LT(secs, 5.0);

  // dog.n.01 and its hypernym ancestors, by text.
  const std::string dog_prefix = "dog, domestic dog, Canis familiaris: ";
  const CsrMatrix* m = &d.train_labels;
  auto row = std::find_if(d.train_text.begin(), d.train_text.end(), [&](const std::string& t) { return t.starts_with(dog_prefix); });
  std::int64_t r = row - d.train_text.begin();
  if (row == d.train_text.end()) {
    m = &d.test_labels;
    row = std::find_if(d.test_text.begin(), d.test_text.end(), [&](const std::string& t) { return t.starts_with(dog_prefix); });
    ASSERT_NE(row, d.test_text.end());
    r = row - d.test_text.begin();
  }
  std::vector<std::string> ancestors;
  for (const auto l : m->row_indices(r)) ancestors.push_back(d.label_text[static_cast<std::size_t>(l)]);
  for (const std::string prefix :
       {"canine, canid: ", "carnivore: ", "mammal, mammalian: ", "animal, animate being, beast, brute, creature, fauna: ",
        "domestic animal, domesticated animal: ", "entity: "}) {
    EXPECT_TRUE(std::any_of(ancestors.begin(), ancestors.end(), [&](const std::string& t) { return t.starts_with(prefix); }))
        << "dog has no ancestor " << prefix;
  }
  EXPECT_FALSE(std::any_of(ancestors.begin(), ancestors.end(), [&](const std::string& t) { return t.starts_with(dog_prefix); }));
}

TEST(WordnetBuilderReal, Sampled20kIsFast) {
  if (!fs::exists(kRealDataNoun)) GTEST_SKIP() << kRealDataNoun << " absent (apt-get install wordnet-base)";
  WordnetBuildOptions o;
  o.data_noun = kRealDataNoun;
  o.max_items = 20000;
  o.seed = 7;
  const auto t0 = std::chrono::steady_clock::now();
  const Dataset d = build_wordnet_dataset(o);
  const double secs = seconds_since(t0);
  EXPECT_LT(secs, 5.0);
  EXPECT_EQ(d.num_train(), 14000);
  EXPECT_EQ(d.num_test(), 6000);
  EXPECT_EQ(d.meta.name, "wordnet-nouns-20000");
  EXPECT_EQ(d.meta.source, "WordNet 3.0 noun hypernyms (wordnet-base), 20000 items, seed 7");
  for (const auto c : d.label_frequencies()) EXPECT_GT(c, 0);
  expect_well_formed(d.train_labels);
  expect_well_formed(d.test_labels);
  std::cout << "[ wordnet  ] 20k build (seed 7): " << secs << " s, train " << d.num_train() << ", test "
            << d.num_test() << ", labels " << d.num_labels() << ", avg labels/train point "
            << static_cast<double>(d.train_labels.nnz()) / static_cast<double>(d.num_train())
            << ", avg labels/test point "
            << static_cast<double>(d.test_labels.nnz()) / static_cast<double>(d.num_test()) << ", filter pairs "
            << d.test_filter.size() << "\n";
}

}  // namespace
}  // namespace xmc

namespace xmc {
namespace {

// Every item in train (train_fraction 1), so each row's labels can be read by text. Depths in the fixture:
// entity 0; physical_entity, abstraction 1; organism, idea 2; animal 3; domestic_animal, canine, cat 4; dog 5;
// Lassie 6.
std::map<std::string, Names> labels_by_item(const std::string& labels, std::int64_t min_depth) {
  TempDir dir;
  dir.write("data.noun", kFixture);
  WordnetBuildOptions o;
  o.data_noun = dir.path() / "data.noun";
  o.train_fraction = 1.0;
  o.labels = labels;
  o.min_depth = min_depth;
  const Dataset d = build_wordnet_dataset(o);
  std::map<std::string, Names> out;
  for (std::int64_t r = 0; r < d.num_train(); ++r) {
    Names names;
    for (const auto l : d.train_labels.row_indices(r)) names.insert(d.label_text[static_cast<std::size_t>(l)].substr(0, d.label_text[static_cast<std::size_t>(l)].find(':')));
    out[d.train_text[static_cast<std::size_t>(r)].substr(0, d.train_text[static_cast<std::size_t>(r)].find(':'))] = names;
  }
  return out;
}

TEST(WordnetBuilder, DirectLabelsAreTheHypernymsThemselves) {
  const auto rows = labels_by_item("direct", 0);
  EXPECT_EQ(rows.size(), 10u);
  EXPECT_EQ(rows.at("dog, domestic dog, Canis familiaris"), (Names{"canine, canid", "domestic animal, domesticated animal"}));
  EXPECT_EQ(rows.at("Lassie"), (Names{"dog, domestic dog, Canis familiaris"}));
  EXPECT_EQ(rows.at("idea, thought"), (Names{"abstraction, abstract entity"}));
}

TEST(WordnetBuilder, MinDepthDropsShallowLabelsAndItemsLeftWithout) {
  // Ancestors from depth 2 on: entity, physical_entity and abstraction are no label; physical_entity,
  // abstraction, idea and organism keep no label and are left out.
  auto rows = labels_by_item("ancestors", 2);
  EXPECT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows.count("organism, being"), 0u);
  EXPECT_EQ(rows.at("dog, domestic dog, Canis familiaris"),
            (Names{"canine, canid", "domestic animal, domesticated animal", "animal, animate being, beast", "organism, being"}));
  EXPECT_EQ(rows.at("animal, animate being, beast"), (Names{"organism, being"}));
  // Direct hypernyms from depth 3 on: animal (parent organism, depth 2) is left out too.
  rows = labels_by_item("direct", 3);
  EXPECT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows.count("animal, animate being, beast"), 0u);
  EXPECT_EQ(rows.at("cat, true cat"), (Names{"animal, animate being, beast"}));
  EXPECT_THROW(labels_by_item("siblings", 0), ConfigError);
  EXPECT_THROW(labels_by_item("direct", -1), ConfigError);
  // So deep that nothing is left: an error that says why.
  try {
    labels_by_item("direct", 7);
    FAIL() << "nothing to build";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no synset has a hypernym of depth 7 or more"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xmc
