#include "engine/data/xc_json_importer.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

std::filesystem::path write_gzip(const std::filesystem::path& path, const std::string& content) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, content.data(), static_cast<unsigned>(content.size()));
  gzclose(f);
  return path;
}

}  // namespace

TEST(XcJsonImporter, ReadsGzippedRecordsTitlesAndContent) {
  test::TempDir dir;
  XcJsonImportOptions o;
  o.labels = write_gzip(dir / "lbl.json.gz",
                        "{\"uid\": \"L0\", \"title\": \"Fruit\", \"content\": \"Edible plant part\"}\n"
                        "{\"uid\": \"L1\", \"title\": \"Caf\\u00e9\", \"content\": \"\"}\n"
                        "{\"uid\": \"L2\", \"title\": \"Sky\", \"content\": \"Above\\nus\"}\n");
  o.train = write_gzip(dir / "trn.json.gz",
                       "{\"uid\": \"a\", \"title\": \"Apple\", \"content\": \"A red fruit\", \"target_ind\": [2, 0]}\n"
                       "{\"uid\": \"b\", \"title\": \"Night\", \"content\": \"dark\", \"target_ind\": []}\n");
  o.test = write_gzip(dir / "tst.json.gz", "{\"uid\": \"c\", \"title\": \"Espresso\", \"content\": \"x\", \"target_ind\": [1]}\n");
  Dataset d = import_xc_json(o);
  EXPECT_EQ(d.label_text, (std::vector<std::string>{"Fruit Edible plant part", "Caf\xC3\xA9", "Sky Above us"}));
  EXPECT_EQ(d.train_text, (std::vector<std::string>{"Apple A red fruit", "Night dark"}));
  EXPECT_EQ(d.train_labels.indices, (std::vector<std::int32_t>{0, 2}));  // sorted
  EXPECT_EQ(d.train_labels.indptr, (std::vector<std::int64_t>{0, 2, 2}));
  EXPECT_EQ(d.test_labels.indices, (std::vector<std::int32_t>{1}));

  o.title_only = true;
  d = import_xc_json(o);
  EXPECT_EQ(d.train_text, (std::vector<std::string>{"Apple", "Night"}));
  EXPECT_EQ(d.label_text[2], "Sky");
}

TEST(XcJsonImporter, BadRecordsNameFileAndLine) {
  test::TempDir dir;
  XcJsonImportOptions o;
  o.labels = write_gzip(dir / "lbl.json.gz", "{\"title\": \"only label\"}\n");
  o.test = write_gzip(dir / "tst.json.gz", "");
  const auto error_for = [&](const std::string& train) -> std::string {
    o.train = write_gzip(dir / "trn.json.gz", train);
    try {
      import_xc_json(o);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string trn = (dir / "trn.json.gz").string();
  EXPECT_EQ(error_for("{\"title\": \"x\", \"target_ind\": [0]}\n{\"title\": \"y\", \"target_ind\": [3]}\n"),
            trn + ": record 2 has label index 3 but the label file has only 1 labels");
  EXPECT_EQ(error_for("{\"title\": \"x\"}\n"), trn + ":1: record has no array field 'target_ind'");
  EXPECT_EQ(error_for("{\"title\": \"x\", \"target_ind\": [-1]}\n"), trn + ":1: 'target_ind' holds -1, not a label index");
  EXPECT_NE(error_for("{\"title\": \"x\", \n").find(trn + ":1: not a JSON object"), std::string::npos);
  EXPECT_NE(error_for("{\"title\": \"caf\xE9\", \"target_ind\": []}\n").find(trn + ":1: not a JSON object"), std::string::npos);
  EXPECT_EQ(error_for(""), trn + ": holds no records: there is nothing to train on");  // imported as 0 rows before
  // 100,000 nested arrays once crashed the process (recursive destruction): a named error now.
  const std::string deep = "{\"title\": \"x\", \"target_ind\": " + std::string(100000, '[') + std::string(100000, ']') + "}\n";
  EXPECT_NE(error_for(deep).find(trn + ":1: not a JSON object: [json.exception.parse_error.101] parse error: values nested deeper than 256 levels"),
            std::string::npos)
      << error_for(deep);
}

}  // namespace xmc
