#include "engine/model/safetensors_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// A safetensors file written by hand: u64 header length (or `declared_length`), header text, data.
std::string raw_safetensors(const std::string& header, const std::string& data, std::uint64_t declared_length) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((declared_length >> (8 * i)) & 0xFF));
  return out + header + data;
}
std::string raw_safetensors(const std::string& header, const std::string& data) {
  return raw_safetensors(header, data, header.size());
}

/// The InputError message of opening `content` written to a file called `name`.
std::string open_error(const test::TempDir& dir, const std::string& name, const std::string& content) {
  const auto path = test::write_file(dir / name, content);
  try {
    SafetensorsFile::open(path);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path.string());
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << name << ": opened without error";
  return {};
}

TEST(Safetensors, DtypeTable) {
  EXPECT_EQ(safe_dtype_size(SafeDtype::F32), 4u);
  EXPECT_EQ(safe_dtype_size(SafeDtype::BF16), 2u);
  EXPECT_EQ(safe_dtype_size(SafeDtype::F64), 8u);
  EXPECT_EQ(safe_dtype_size(SafeDtype::BOOL), 1u);
  EXPECT_EQ(safe_dtype_name(SafeDtype::I16), "I16");
  EXPECT_EQ(parse_safe_dtype("BF16"), SafeDtype::BF16);
  EXPECT_EQ(parse_safe_dtype("F8_E4M3"), std::nullopt);
  EXPECT_EQ(format_shape(std::vector<std::int64_t>{2, 3}), "[2, 3]");
  EXPECT_EQ(format_shape(std::vector<std::int64_t>{}), "[]");
}

TEST(Safetensors, RoundTripOfSeveralDtypes) {
  test::TempDir dir;
  const auto f32 = bytes_of(std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 1e-8f, 7.0f});
  const auto f16 = bytes_of(std::vector<std::uint16_t>{0x3C00, 0xC000, 0x7BFF});  // 1, -2, 65504
  const auto bf16 = bytes_of(std::vector<std::uint16_t>{0x3F80, 0x4000});          // 1, 2
  const auto f64 = bytes_of(std::vector<double>{3.141592653589793});
  const auto i64 = bytes_of(std::vector<std::int64_t>{-1, 1LL << 40, 7, 8});
  const auto i32 = bytes_of(std::vector<std::int32_t>{-5, 6});
  const auto i16 = bytes_of(std::vector<std::int16_t>{-300, 300, 1});
  const auto i8 = bytes_of(std::vector<std::int8_t>{-7});
  const auto u8 = bytes_of(std::vector<std::uint8_t>{0, 255, 128, 1, 2});
  const auto boolean = bytes_of(std::vector<std::uint8_t>{1, 0, 1, 1});
  const std::vector<TensorToWrite> tensors{
      {"weights.f32", SafeDtype::F32, {2, 3}, f32},  {"half", SafeDtype::F16, {3}, f16},
      {"brain", SafeDtype::BF16, {1, 2}, bf16},      {"pi", SafeDtype::F64, {}, f64},
      {"ids", SafeDtype::I64, {2, 2}, i64},          {"i32", SafeDtype::I32, {2}, i32},
      {"i16", SafeDtype::I16, {3, 1}, i16},          {"i8", SafeDtype::I8, {1}, i8},
      {"empty", SafeDtype::F32, {0, 4}, {}},         {"u8", SafeDtype::U8, {5}, u8},
      {"mask", SafeDtype::BOOL, {2, 2}, boolean},
  };
  const auto path = dir / "model.safetensors";
  write_safetensors(path, tensors, {{"format", "pt"}, {"note", "ünïcode ok"}});

  const std::string raw = test::read_file(path);
  std::uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | static_cast<unsigned char>(raw[static_cast<std::size_t>(i)]);
  EXPECT_EQ(header_length % 8, 0u) << "header padded to 8 bytes";

  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", "ünïcode ok"}}));
  ASSERT_EQ(file.tensors().size(), tensors.size());
  for (const TensorToWrite& expected : tensors) {
    const TensorInfo* info = file.find(expected.name);
    ASSERT_NE(info, nullptr) << expected.name;
    EXPECT_EQ(info->name, expected.name);
    EXPECT_EQ(info->dtype, expected.dtype) << expected.name;
    EXPECT_EQ(info->shape, expected.shape) << expected.name;
    const auto data = file.data(*info);
    ASSERT_EQ(data.size(), expected.bytes.size()) << expected.name;
    EXPECT_EQ(std::memcmp(data.data(), expected.bytes.data(), data.size()), 0) << expected.name;
  }
  EXPECT_EQ(file.find("pi")->numel(), 1);
  EXPECT_EQ(file.find("empty")->numel(), 0);
  EXPECT_EQ(file.find("missing"), nullptr);
  for (std::size_t i = 1; i < file.tensors().size(); ++i)
    EXPECT_LE(file.tensors()[i - 1].begin, file.tensors()[i].begin) << "ordered by offset";

  double pi = 0;
  std::memcpy(&pi, file.data(*file.find("pi")).data(), sizeof pi);
  EXPECT_EQ(pi, 3.141592653589793);

  const SafetensorsFile copy = file;  // copies share the mapping
  EXPECT_EQ(copy.data(*copy.find("ids")).data(), file.data(*file.find("ids")).data());
}

TEST(Safetensors, ReadsAHandWrittenFileWithHolesAndNoMetadata) {
  test::TempDir dir;
  // Two F32 scalars at bytes [0, 4) and [8, 12): the gap is allowed.
  const std::string header =
      R"({"b":{"dtype":"F32","shape":[],"data_offsets":[8,12]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  float one = 1.0f, two = 2.0f;
  std::string data(12, '\0');
  std::memcpy(data.data(), &one, 4);
  std::memcpy(data.data() + 8, &two, 4);
  const auto path = test::write_file(dir / "holes.safetensors", raw_safetensors(header, data));
  const SafetensorsFile file = SafetensorsFile::open(path);
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "a");
  EXPECT_EQ(file.tensors()[1].name, "b");
  EXPECT_TRUE(file.metadata().empty());
  float value = 0;
  std::memcpy(&value, file.data(*file.find("b")).data(), 4);
  EXPECT_EQ(value, 2.0f);
}

TEST(Safetensors, RejectsTruncatedFiles) {
  test::TempDir dir;
  EXPECT_NE(open_error(dir, "empty.safetensors", "").find("truncated"), std::string::npos);
  EXPECT_NE(open_error(dir, "short.safetensors", "abc").find("truncated"), std::string::npos);

  // A valid header whose data was cut off: names the tensor.
  const std::string header = R"({"layer.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  const std::string message = open_error(dir, "cut.safetensors", raw_safetensors(header, std::string(10, '\0')));
  EXPECT_NE(message.find("layer.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST(Safetensors, RejectsAHeaderLengthPastTheEnd) {
  test::TempDir dir;
  const std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const std::string message =
      open_error(dir, "long_header.safetensors", raw_safetensors(header, std::string(4, '\0'), 1u << 20));
  EXPECT_NE(message.find("header length 1048576"), std::string::npos) << message;
  // A huge length must not overflow into a small one.
  const std::string huge = open_error(dir, "huge.safetensors", raw_safetensors(header, "", ~std::uint64_t{0}));
  EXPECT_NE(huge.find("header length"), std::string::npos) << huge;
}

TEST(Safetensors, RejectsOverlappingTensors) {
  test::TempDir dir;
  const std::string header =
      R"({"first":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
      R"("second":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})";
  const std::string message = open_error(dir, "overlap.safetensors", raw_safetensors(header, std::string(24, '\0')));
  EXPECT_NE(message.find("'second'"), std::string::npos) << message;
  EXPECT_NE(message.find("'first'"), std::string::npos) << message;
  EXPECT_NE(message.find("overlaps"), std::string::npos) << message;

  // Contained in a larger tensor, after a tensor that ends early.
  const std::string nested =
      R"({"big":{"dtype":"U8","shape":[20],"data_offsets":[0,20]},)"
      R"("small":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
      R"("inner":{"dtype":"U8","shape":[2],"data_offsets":[10,12]}})";
  const std::string nested_message =
      open_error(dir, "nested.safetensors", raw_safetensors(nested, std::string(20, '\0')));
  EXPECT_NE(nested_message.find("overlaps tensor 'big'"), std::string::npos) << nested_message;
}

TEST(Safetensors, RejectsAnUnknownDtype) {
  test::TempDir dir;
  const std::string header = R"({"quantized.weight":{"dtype":"Q4","shape":[8],"data_offsets":[0,4]}})";
  const std::string message = open_error(dir, "dtype.safetensors", raw_safetensors(header, std::string(4, '\0')));
  EXPECT_NE(message.find("quantized.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown dtype 'Q4'"), std::string::npos) << message;
}

TEST(Safetensors, RejectsAShapeThatDoesNotMatchTheByteRange) {
  test::TempDir dir;
  const std::string header = R"({"emb.weight":{"dtype":"F16","shape":[3,2],"data_offsets":[0,8]}})";
  const std::string message = open_error(dir, "size.safetensors", raw_safetensors(header, std::string(8, '\0')));
  EXPECT_NE(message.find("emb.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("[3, 2]"), std::string::npos) << message;
  EXPECT_NE(message.find("needs 12 bytes"), std::string::npos) << message;

  const std::string overflow = R"({"big":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})";
  const std::string overflow_message =
      open_error(dir, "overflow.safetensors", raw_safetensors(overflow, std::string(8, '\0')));
  EXPECT_NE(overflow_message.find("'big'"), std::string::npos) << overflow_message;
}

TEST(Safetensors, RejectsBadOffsetsAndEntries) {
  test::TempDir dir;
  const std::string reversed = R"({"r":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})";
  EXPECT_NE(open_error(dir, "reversed.safetensors", raw_safetensors(reversed, std::string(4, '\0'))).find("begin > end"),
            std::string::npos);
  const std::string negative = R"({"neg":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})";
  EXPECT_NE(open_error(dir, "negative.safetensors", raw_safetensors(negative, "x")).find("'neg'"), std::string::npos);
  const std::string no_offsets = R"({"n":{"dtype":"U8","shape":[1]}})";
  EXPECT_NE(open_error(dir, "no_offsets.safetensors", raw_safetensors(no_offsets, "x")).find("data_offsets"),
            std::string::npos);
  const std::string bad_metadata = R"({"__metadata__":{"format":3}})";
  EXPECT_NE(open_error(dir, "metadata.safetensors", raw_safetensors(bad_metadata, "")).find("format"),
            std::string::npos);
}

TEST(Safetensors, RejectsBadJson) {
  test::TempDir dir;
  const std::string message = open_error(dir, "json.safetensors", raw_safetensors(R"({"x": {"dtype": )", ""));
  EXPECT_NE(message.find("bad JSON"), std::string::npos) << message;
  const std::string array = open_error(dir, "array.safetensors", raw_safetensors("[1, 2]", ""));
  EXPECT_NE(array.find("bad JSON"), std::string::npos) << array;
}

TEST(Safetensors, RejectsADeeplyNestedHeader) {
  // A shape nested 100,000 levels deep once crashed the reader (recursive destruction of the JSON).
  test::TempDir dir;
  const std::string header = "{\"w\": {\"dtype\": \"F32\", \"shape\": " + std::string(100000, '[') + std::string(100000, ']') +
                             ", \"data_offsets\": [0, 4]}}";
  EXPECT_NE(open_error(dir, "deep.safetensors", raw_safetensors(header, "abcd")).find("nested deeper than 256 levels"), std::string::npos);
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
  test::TempDir dir;
  const auto four = bytes_of(std::vector<float>{1, 2, 3, 4});
  EXPECT_THROW(write_safetensors(dir / "a.safetensors", {{"w", SafeDtype::F32, {5}, four}}), ConfigError);
  EXPECT_THROW(write_safetensors(dir / "b.safetensors", {{"w", SafeDtype::F32, {4}, four}, {"w", SafeDtype::F32, {4}, four}}),
               ConfigError);
  EXPECT_THROW(write_safetensors(dir / "c.safetensors", {{"__metadata__", SafeDtype::F32, {4}, four}}), ConfigError);
  EXPECT_FALSE(std::filesystem::exists(dir / "a.safetensors"));
  EXPECT_THROW(write_safetensors(dir / "no_such_folder" / "d.safetensors", {}), InputError);
}

}  // namespace
}  // namespace xmc
