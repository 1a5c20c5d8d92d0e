#include "engine/data/mulan_importer.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

const char* kXml =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<labels xmlns=\"http://mulan.sourceforge.net/labels\">\n"
    "<label name=\"TAG_web_design\"></label>\n"
    "<label name=\"TAG_a&amp;b\"></label>\n"
    "</labels>\n";

// Attributes: 0 'hello world' (quoted), 1 TAG_a&b, 2 zebra, 3 TAG_web_design. One sparse, one dense row.
const char* kHeader =
    "% comment\n"
    "@relation tiny_train\n\n"
    "@attribute 'hello world' {0,1}\n"
    "@attribute TAG_a&b {0,1}\n"
    "@ATTRIBUTE zebra numeric\n"
    "@attribute TAG_web_design {0,1}\n"
    "@data\n";

}  // namespace

TEST(MulanImporter, SplitsWordAndLabelAttributes) {
  test::TempDir dir;
  MulanImportOptions o;
  o.labels_xml = test::write_file(dir / "tiny.xml", kXml);
  o.train_arff = test::write_file(dir / "train.arff", std::string(kHeader) + "{0 1,1 1,2 3,3 1}\n0,0,0,1\n");
  o.test_arff = test::write_file(dir / "test.arff", std::string(kHeader) + "{2 1}\n");
  const Dataset d = import_mulan(o);
  EXPECT_EQ(d.meta.name, "tiny");
  EXPECT_EQ(d.label_text, (std::vector<std::string>{"web design", "a&b"}));
  EXPECT_EQ(d.meta.feature_names, (std::vector<std::string>{"hello world", "zebra"}));
  EXPECT_EQ(d.train_text, (std::vector<std::string>{"hello world zebra", ""}));
  EXPECT_EQ(d.test_text, (std::vector<std::string>{"zebra"}));
  // Label indices follow the XML order: web_design = 0, a&b = 1.
  EXPECT_EQ(d.train_labels.indices, (std::vector<std::int32_t>{0, 1, 0}));
  EXPECT_EQ(d.train_labels.indptr, (std::vector<std::int64_t>{0, 2, 3}));
  EXPECT_EQ(d.test_labels.nnz(), 0);
  ASSERT_TRUE(d.train_features.has_value());
  EXPECT_EQ(d.train_features->cols, 2);
  EXPECT_EQ(d.train_features->indices, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(d.train_features->values, (std::vector<float>{1.0f, 3.0f}));
}

TEST(MulanImporter, MalformedInputNamesFileAndLine) {
  test::TempDir dir;
  MulanImportOptions o;
  o.labels_xml = test::write_file(dir / "tiny.xml", kXml);
  o.test_arff = test::write_file(dir / "test.arff", std::string(kHeader) + "{2 1}\n");
  const auto expect_error = [&](const std::string& data, const std::string& expected) {
    o.train_arff = test::write_file(dir / "train.arff", std::string(kHeader) + data);
    try {
      import_mulan(o);
      ADD_FAILURE() << "no error for " << data;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), o.train_arff.string() + ":" + expected);
    }
  };
  expect_error("{0 1,7 1}\n", "9: attribute index 7 is out of range (the header declares 4 attributes)");
  expect_error("{0 1}\n{3 x}\n", "10: value 'x' is not a finite number (only numeric attributes are supported)");
  expect_error("0,1,0\n", "9: dense row has 3 values but the header declares 4 attributes");
  expect_error("{2 1,0 1}\n", "9: attribute indices in a sparse row must increase (0 after 2)");
  // Accepted before: an index with trailing junk or in hex (read as 2 and 0), a label value of -1 (a
  // positive), and an ARFF without rows.
  expect_error("{2abc 1}\n", "9: expected 'INDEX VALUE' in a sparse row, got '2abc 1'");
  expect_error("{0x2 1}\n", "9: expected 'INDEX VALUE' in a sparse row, got '0x2 1'");
  expect_error("{0 1}\n{3 -1}\n", "10: label attribute 'TAG_web_design' has value -1; labels are 0 or 1");
  expect_error("", " no data rows after @data");
  // An attribute declared twice (a label twice gave rows "0:1 0:1" that the reader then rejected).
  o.train_arff = test::write_file(dir / "train.arff", std::string(kHeader).replace(std::string(kHeader).find("@data"), 5,
                                                                                  "@attribute TAG_a&b {0,1}\n@data") + "{0 1}\n");
  try {
    import_mulan(o);
    ADD_FAILURE() << "a duplicate attribute was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), o.train_arff.string() + ":8: @attribute 'TAG_a&b' is declared twice");
  }
}

// Found by the mulan_xml fuzz target: a name attribute at the end of the file, or with its quote never
// closed, read past the text (std::out_of_range escaped as "internal error").
TEST(MulanImporter, LabelsXmlWithAnUnfinishedNameNamesFileAndLine) {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases{
      {"<labels>\n<label name=", ":2: <label> name attribute without a quoted value"},
      {"<labels>\n\n<label name=\"TAG_a", ":3: <label> name attribute whose quote is never closed"},
      {"<labels><label name=TAG_a></label>", ":1: <label> name attribute without a quoted value"},
      {"<labels><label id=\"1\"></label>", ":1: <label> element without a name attribute"},
  };
  for (const auto& [xml, expected] : cases) {
    const auto path = test::write_file(dir / "labels.xml", xml);
    try {
      read_mulan_label_names(path);
      ADD_FAILURE() << "accepted " << xml;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), path.string() + expected);
    }
  }
  EXPECT_EQ(read_mulan_label_names(test::write_file(dir / "ok.xml", "<labels><label name='TAG_x'/></labels>")),
            (std::vector<std::string>{"TAG_x"}));
}

TEST(MulanImporter, LabelMissingFromArffIsAnError) {
  test::TempDir dir;
  MulanImportOptions o;
  o.labels_xml = test::write_file(dir / "x.xml", "<labels><label name=\"TAG_nowhere\"></label></labels>");
  o.train_arff = test::write_file(dir / "train.arff", std::string(kHeader) + "{0 1}\n");
  o.test_arff = o.train_arff;
  EXPECT_THROW(import_mulan(o), InputError);
}

// The real benchmarks: sizes as published with the datasets (Katakis et al. 2008 for Bibtex, Tsoumakas
// et al. 2008 for Delicious; mulan's dataset table).
TEST(MulanImporter, RealBibtexAndDeliciousHaveThePublishedSizes) {
  const std::filesystem::path mulan = std::filesystem::path(XMC_SHARED_DIR) / "datasets/mulan";
  if (!std::filesystem::exists(mulan)) GTEST_SKIP() << "shared mulan datasets not found at " << mulan;
  struct Expected {
    const char* name;
    std::int64_t train, test, labels, features;
    double cardinality;  // average labels per point over train + test
  };
  for (const Expected& e : {Expected{"bibtex", 4880, 2515, 159, 1836, 2.402}, Expected{"delicious", 12920, 3185, 983, 500, 19.020}}) {
    MulanImportOptions o;
    const auto base = mulan / e.name;
    o.train_arff = base / (std::string(e.name) + "-train.arff");
    o.test_arff = base / (std::string(e.name) + "-test.arff");
    o.labels_xml = base / (std::string(e.name) + ".xml");
    const Dataset d = import_mulan(o);
    EXPECT_EQ(d.num_train(), e.train) << e.name;
    EXPECT_EQ(d.num_test(), e.test) << e.name;
    EXPECT_EQ(d.num_labels(), e.labels) << e.name;
    EXPECT_EQ(d.train_features->cols, e.features) << e.name;
    const double cardinality = static_cast<double>(d.train_labels.nnz() + d.test_labels.nnz()) / static_cast<double>(e.train + e.test);
    EXPECT_NEAR(cardinality, e.cardinality, 0.001) << e.name;
  }
}

}  // namespace xmc
