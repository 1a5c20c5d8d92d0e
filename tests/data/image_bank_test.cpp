// Image feature banks: .npy files as NumPy writes them (headers built here byte by byte, float16 values worked
// out by hand), what counts as an image, dataset folders that carry banks, and every malformed bank refused by
// name.
#include "engine/data/image_bank.h"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/npy_file.h"
#include "engine/data/synthetic_builder.h"
#include "engine/data/zero_shot_split.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

/// An .npy file as numpy.save writes it (version 1.0, header padded to 64 bytes with spaces and a newline).
std::string npy_bytes(const std::string& dict, const std::string& data, char major = 1) {
  std::string header = dict;
  const std::size_t prefix = major == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += major;
  out += '\0';
  const auto length = static_cast<std::uint32_t>(header.size());
  out += static_cast<char>(length & 0xff);
  out += static_cast<char>((length >> 8) & 0xff);
  if (major != 1) {
    out += '\0';
    out += '\0';
  }
  return out + header + data;
}

template <class T>
std::string raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::string open_error(const std::filesystem::path& bank, const std::filesystem::path& counts = {}) {
  try {
    (void)ImageBank::open(bank, counts);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ImageBank, ReadsFloat16AsNumpyWritesIt) {
  test::TempDir dir;
  // 1.0 = 0x3C00, −2.0 = 0xC000, 0.5 = 0x3800, 65504 = 0x7BFF (largest), 2^-24 = 0x0001 (smallest subnormal), −0 = 0x8000.
  const std::vector<std::uint16_t> halves{0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001, 0x8000};
  const auto bank = test::write_file(dir.path() / "b.npy", npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 2, 3), }", raw(halves)));
  const ImageBank images = ImageBank::open(bank);
  EXPECT_EQ(images.rows(), 1);
  EXPECT_EQ(images.slots(), 2);
  EXPECT_EQ(images.dim(), 3);
  EXPECT_EQ(images.precision(), ImageBank::Precision::float16);
  float first[3], second[3];
  images.copy_image(0, 0, first);
  images.copy_image(0, 1, second);
  EXPECT_EQ(first[0], 1.0f);
  EXPECT_EQ(first[1], -2.0f);
  EXPECT_EQ(first[2], 0.5f);
  EXPECT_EQ(second[0], 65504.0f);
  EXPECT_EQ(second[1], std::ldexp(1.0f, -24));
  EXPECT_EQ(second[2], 0.0f);
  EXPECT_TRUE(std::signbit(second[2]));
}

// A header numpy would pad to 64 bytes, here one byte longer: the data starts at an odd offset of the mapping,
// where 2- and 4-byte values cannot be loaded in place (the fuzzer's find: undefined behaviour before).
TEST(ImageBank, DataAtAnOddOffsetReadsTheSame) {
  test::TempDir dir;
  const auto unpadded = [](const std::string& dict, const std::string& data) {
    std::string header = dict + "  \n";  // 10 + header bytes: odd below
    if ((10 + header.size()) % 2 == 0) header.insert(header.size() - 1, " ");
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>((header.size() >> 8) & 0xff);
    return out + header + data;
  };
  const std::vector<std::uint16_t> halves{0x3C00, 0xC000, 0x0000, 0x8000};  // 1, -2; then a blank slot (+0, -0)
  const auto half_bank = test::write_file(dir.path() / "h.npy", unpadded("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 2, 2), }", raw(halves)));
  const ImageBank h = ImageBank::open(half_bank);
  float got[2];
  h.copy_image(0, 0, got);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], -2.0f);
  EXPECT_EQ(h.image_slots(0, 2), (std::vector<std::int64_t>{0})) << "the zero slot is no image";
  const std::vector<float> floats{0.25f, -3.0f, 0.0f, 0.0f};
  const auto float_bank = test::write_file(dir.path() / "f.npy", unpadded("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2), }", raw(floats)));
  const ImageBank f = ImageBank::open(float_bank);
  f.copy_image(0, 0, got);
  EXPECT_EQ(got[0], 0.25f);
  EXPECT_EQ(got[1], -3.0f);
  EXPECT_EQ(f.image_slots(0, 2), (std::vector<std::int64_t>{0}));
}

TEST(ImageBank, ATwoDimensionalArrayIsOneImagePerItemAndVersionTwoHeadersRead) {
  test::TempDir dir;
  const std::vector<float> values{1, 2, 3, 4, 5, 6};
  const auto bank = test::write_file(dir.path() / "b.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", raw(values), 2));
  const ImageBank images = ImageBank::open(bank);
  EXPECT_EQ(images.rows(), 3);
  EXPECT_EQ(images.slots(), 1);
  float v[2];
  images.copy_image(2, 0, v);
  EXPECT_EQ(v[0], 5.0f);
  EXPECT_EQ(v[1], 6.0f);
}

TEST(ImageBank, CountsAndZeroVectorsDecideWhichSlotsAreImages) {
  // Row 0: three images listed, the middle one all zeros (padding). Row 1: count 1 of 3. Row 2: count 0.
  std::vector<float> values(3 * 3 * 2, 1.0f);
  values[2] = values[3] = 0.0f;
  const ImageBank bank = ImageBank::from_values(3, 3, 2, values, {3, 1, 0});
  EXPECT_EQ(bank.image_slots(0, 3), (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(bank.image_slots(0, 1), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(bank.image_slots(1, 3), (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(bank.image_slots(2, 3).empty());
  const ImageCoverage coverage = image_coverage(bank);
  EXPECT_EQ(coverage.rows, 3);
  EXPECT_EQ(coverage.rows_with_images, 2);
  EXPECT_EQ(coverage.images, 3);
  EXPECT_THROW(bank.image_slots(3, 1), ConfigError);
}

TEST(ImageBank, SaveOpenAndSubsetRoundTrip) {
  test::TempDir dir;
  std::vector<float> values(4 * 2 * 3);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 1.0f;
  const ImageBank bank = ImageBank::from_values(4, 2, 3, values, {2, 1, 0, 2});
  bank.save(dir.path() / "b.npy", dir.path() / "b_count.npy");
  const ImageBank back = ImageBank::open(dir.path() / "b.npy", dir.path() / "b_count.npy");
  ASSERT_EQ(back.rows(), 4);
  for (std::int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(back.listed_count(r), bank.listed_count(r));
    for (std::int64_t s = 0; s < 2; ++s) {
      float a[3], b[3];
      bank.copy_image(r, s, a);
      back.copy_image(r, s, b);
      EXPECT_EQ(0, std::memcmp(a, b, sizeof a));
    }
  }
  // numpy reads the header we write: the dict, then spaces to a 64-byte boundary and a newline.
  const std::string bytes = test::read_file(dir.path() / "b.npy");
  EXPECT_EQ(bytes.substr(10, 62), "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2, 3), }");
  EXPECT_EQ((bytes.find('\n') + 1) % 64, 0u);
  EXPECT_EQ(test::read_file(dir.path() / "b_count.npy").substr(10, 57), "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }");

  const std::vector<std::int64_t> picked{3, 0};
  const ImageBank part = bank.subset(picked);
  float a[3], b[3];
  part.copy_image(0, 1, a);
  bank.copy_image(3, 1, b);
  EXPECT_EQ(0, std::memcmp(a, b, sizeof a));
  EXPECT_EQ(part.listed_count(1), 2);

  // A range is a view: the same values, row 0 of the view being row 2 of the bank.
  const ImageBank view = back.rows_between(2, 4);
  EXPECT_EQ(view.rows(), 2);
  EXPECT_EQ(view.listed_count(0), 0);
  view.copy_image(1, 1, a);
  bank.copy_image(3, 1, b);
  EXPECT_EQ(0, std::memcmp(a, b, sizeof a));
  EXPECT_THROW(back.rows_between(3, 5), ConfigError);
}

TEST(ImageBank, MalformedBanksAreRefusedByName) {
  test::TempDir dir;
  const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 2), }";
  const std::vector<float> four{1, 2, 3, 4};
  auto write = [&](const std::string& name, const std::string& bytes) { return test::write_file(dir.path() / name, bytes); };
  const auto cases = std::vector<std::pair<std::filesystem::path, std::string>>{
      {write("magic.npy", "PK\x03\x04 not numpy at all"), "no \"\\x93NUMPY\" magic"},
      {write("f8.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1, 1), }", raw(std::vector<double>{1, 2}))), "'<f8' elements"},
      {write("big_endian.npy", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 1, 2), }", raw(four))), "'>f4' elements"},
      {write("fortran.npy", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1, 2), }", raw(four))), "fortran_order is True"},
      {write("rank4.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 2), }", raw(four))), "has 4 dimensions"},
      {write("short.npy", npy_bytes(good_dict, raw(std::vector<float>{1, 2, 3}))), "truncated or damaged"},
      {write("nan.npy", npy_bytes(good_dict, raw(std::vector<float>{1, 2, 3, std::nanf("")}))), "row 1, image 0 holds a value that is not finite"},
      {write("cut_header.npy", npy_bytes(good_dict, "").substr(0, 30)), "header is cut short"},
      {write("version9.npy", npy_bytes(good_dict, raw(four), 9)), "version 9"},
      {write("unknown_key.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 2), 'x': 1}", raw(four))), "unknown key 'x'"},
      {write("no_shape.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, }", raw(four))), "lacks one of"},
      {write("zero_m.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 0), }", "")), "embeddings of 0 numbers"},
  };
  for (const auto& [file, expected] : cases) {
    const std::string error = open_error(file);
    EXPECT_NE(error.find(file.string()), std::string::npos) << error;
    EXPECT_NE(error.find(expected), std::string::npos) << file.filename() << ": " << error;
  }
  const auto bank = write("bank.npy", npy_bytes(good_dict, raw(four)));
  const auto too_many = write("c1.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", raw(std::vector<std::int32_t>{1, 2})));
  EXPECT_NE(open_error(bank, too_many).find("row 1 counts 2 images, outside 0 .. 1"), std::string::npos) << open_error(bank, too_many);
  const auto rows = write("c2.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", raw(std::vector<std::int32_t>{1, 1, 1})));
  EXPECT_NE(open_error(bank, rows).find("has 3 counts, but"), std::string::npos) << open_error(bank, rows);
  const auto floats = write("c3.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", raw(std::vector<float>{1, 1})));
  EXPECT_NE(open_error(bank, floats).find("int32 ('<i4') or int64"), std::string::npos) << open_error(bank, floats);
  EXPECT_NE(open_error(dir.path() / "absent.npy").find("absent.npy"), std::string::npos);
}

Dataset dataset_with_images() {
  Dataset d;
  d.meta.name = "pictures";
  d.train_text = {"red apple", "blue sky", "green leaf"};
  d.test_text = {"apple"};
  d.label_text = {"fruit", "weather"};
  d.train_labels = csr_from_rows({{0}, {1}, {0}}, 2);
  d.test_labels = csr_from_rows({{0}}, 2);
  d.train_images = std::make_shared<const ImageBank>(ImageBank::from_values(3, 2, 4, std::vector<float>(24, 0.5f), {2, 0, 1}));
  d.test_images = std::make_shared<const ImageBank>(ImageBank::from_values(1, 2, 4, std::vector<float>(8, 1.5f)));
  d.label_images = std::make_shared<const ImageBank>(ImageBank::from_values(2, 1, 4, std::vector<float>(8, -1.0f)));
  return d;
}

TEST(ImageBank, DatasetFoldersCarryTheirBanksAndTheFingerprintFollowsThem) {
  test::TempDir dir;
  save_dataset(dataset_with_images(), dir.path());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "images" / "trn_count.npy"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "images" / "tst_count.npy"));
  const Dataset back = load_dataset(dir.path());
  ASSERT_TRUE(back.train_images && back.test_images && back.label_images);
  EXPECT_EQ(back.train_images->image_slots(0, 3).size(), 2u);
  EXPECT_TRUE(back.train_images->image_slots(1, 3).empty());
  EXPECT_EQ(dataset_image_dim(dir.path()), 4);
  EXPECT_FALSE(load_dataset(dir.path(), {.load_images = false}).has_images());

  const std::string before = dataset_fingerprint(dir.path());
  ImageBank::from_values(2, 1, 4, std::vector<float>(8, 2.0f)).save(dir.path() / "images" / "lbl.npy", {});
  EXPECT_NE(dataset_fingerprint(dir.path()), before);
}

TEST(ImageBank, ADatasetBankThatDoesNotFitItsSplitIsRefusedByName) {
  test::TempDir dir;
  save_dataset(dataset_with_images(), dir.path());
  auto error_of = [&] {
    try {
      load_dataset(dir.path());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  ImageBank::from_values(3, 1, 4, std::vector<float>(12, 1.0f)).save(dir.path() / "images" / "lbl.npy", {});
  EXPECT_NE(error_of().find("lbl.npy: has 3 rows, but lbl.raw.txt has 2"), std::string::npos) << error_of();
  ImageBank::from_values(2, 1, 5, std::vector<float>(10, 1.0f)).save(dir.path() / "images" / "lbl.npy", {});
  EXPECT_NE(error_of().find("holds embeddings of 5 numbers, but the dataset's other banks hold 4"), std::string::npos) << error_of();
  std::filesystem::remove(dir.path() / "images" / "lbl.npy");
  std::filesystem::copy_file(dir.path() / "images" / "trn_count.npy", dir.path() / "images" / "lbl_count.npy");
  EXPECT_NE(error_of().find("counts images, but there is no lbl.npy beside it"), std::string::npos) << error_of();
}

TEST(ImageBank, AZeroShotSplitCarriesTheBanksRowForRow) {
  test::TempDir dir;
  save_dataset(dataset_with_images(), dir / "in");
  split_zero_shot({.in = dir / "in", .out = dir / "out", .novel_frac = 0.5, .seed = 3});
  const Dataset split = load_dataset(dir / "out");
  ASSERT_TRUE(split.train_images && split.test_images && split.label_images);
  EXPECT_EQ(split.train_images->listed_count(1), 0);
  float v[4];
  split.label_images->copy_image(1, 0, v);
  EXPECT_EQ(v[3], -1.0f);
}

TEST(ImageBank, TheTwoViewSyntheticSetHidesTwinsFromTheTextButNotFromTheImages) {
  SyntheticBuildOptions options;
  options.labels = 40;
  options.train = 200;
  options.test = 50;
  options.labels_per_query = 1.0;
  options.image_dim = 32;
  const Dataset d = build_synthetic_dataset(options);
  ASSERT_TRUE(d.train_images && d.test_images && d.label_images);
  EXPECT_EQ(d.label_images->rows(), 40);
  // Twins 2k and 2k+1 share their topic word (the first word of their texts).
  for (std::size_t l = 0; l < 40; l += 2)
    EXPECT_EQ(d.label_text[l].substr(0, d.label_text[l].find(' ')), d.label_text[l + 1].substr(0, d.label_text[l + 1].find(' ')));
  // A one-label query's image is nearer its own label's image than its twin's (cosines of unit vectors), but for
  // the chance agreement of random projections in 32 dimensions.
  auto cosine = [&](const ImageBank& a, std::int64_t i, const ImageBank& b, std::int64_t j) {
    float x[32], y[32];
    a.copy_image(i, 0, x);
    b.copy_image(j, 0, y);
    double dot = 0;
    for (int k = 0; k < 32; ++k) dot += static_cast<double>(x[k]) * y[k];
    return dot;
  };
  int nearer = 0;
  for (std::int64_t r = 0; r < d.num_train(); ++r) {
    const std::int32_t label = d.train_labels.row_indices(r)[0];
    nearer += cosine(*d.train_images, r, *d.label_images, label) > cosine(*d.train_images, r, *d.label_images, label ^ 1);
  }
  EXPECT_GE(nearer, d.num_train() * 9 / 10);
  // Without images the texts are as they always were: the same options give the pinned dataset's texts.
  options.image_dim = 0;
  const Dataset plain = build_synthetic_dataset(options);
  EXPECT_FALSE(plain.has_images());
  EXPECT_NE(plain.label_text[1].substr(0, plain.label_text[1].find(' ')), plain.label_text[0].substr(0, plain.label_text[0].find(' ')));
}

}  // namespace
}  // namespace xmc
