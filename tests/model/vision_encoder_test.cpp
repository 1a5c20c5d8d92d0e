// The vision encoders that make image banks: ViT and SigLIP forward against a plain PyTorch transcription of Hugging
// Face's ViTModel and SiglipVisionModel (tests/reference/make_vision_fixtures.py, Debian's python3-torch; outputs
// committed in tests/fixtures/vision), loading errors by name, and `xmc images embed`'s bank from a list of files.
#include <gtest/gtest.h>
#include <png.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/data/image_bank.h"
#include "engine/model/vision/vision_config.h"
#include "engine/model/vision/vision_encoder.h"
#include "engine/session/image_bank_maker.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(XMC_TEST_FIXTURES) / "vision";

void expect_matches_reference(const std::string& name) {
  const VisionEncoder encoder = VisionEncoder::load(kFixtures / name, torch::kCPU);
  std::ifstream in(kFixtures / name / "expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const auto side = encoder.config().image_size;
  const torch::Tensor pixels = torch::tensor(expected["pixels"].get<std::vector<float>>()).view({2, 3, side, side});
  std::vector<torch::Tensor> rows;
  for (const auto& row : expected["pooled"]) rows.push_back(torch::tensor(row.get<std::vector<float>>()));
  const torch::Tensor reference = torch::stack(rows);
  const torch::Tensor got = encoder.embed(pixels);
  ASSERT_EQ(got.sizes(), reference.sizes());
  const double error = ((got - reference).norm(2, 1) / reference.norm(2, 1)).max().item<double>();
  EXPECT_LT(error, 1e-4) << name << ": relative error " << error;
}

TEST(VisionEncoder, VitPoolsTheFinalLayerNormsClsVectorAsTheReference) { expect_matches_reference("vit"); }

TEST(VisionEncoder, SiglipPoolsWithItsAttentionHeadAsTheReference) { expect_matches_reference("siglip"); }

TEST(VisionEncoder, ConfigsAndWeightsThatDoNotFitAreRefusedByName) {
  EXPECT_THROW(parse_vision_config(R"({"model_type": "siglip2", "vision_config": {}})", "c.json"), ConfigError);
  EXPECT_THROW(parse_vision_config(R"({"model_type": "bert"})", "c.json"), ConfigError);
  EXPECT_THROW(parse_vision_config(R"({"model_type": "vit", "image_size": 30, "patch_size": 8})", "c.json"), ConfigError);
  const VisionConfig from_siglip = parse_vision_config(R"({"model_type": "siglip", "vision_config": {"hidden_size": 64, "num_attention_heads": 4}})", "c.json");
  EXPECT_EQ(from_siglip.family, VisionFamily::siglip);
  EXPECT_EQ(from_siglip.hidden_size, 64);
  EXPECT_EQ(from_siglip.intermediate_size, 3072);  // SiglipVisionConfig's default
  EXPECT_TRUE(from_siglip.gelu_tanh);

  test::TempDir dir;
  std::filesystem::copy(kFixtures / "vit", dir / "vit");
  VisionConfig wider = read_vision_config(dir / "vit" / "config.json");
  wider.intermediate_size = 64;
  test::write_file(dir / "vit" / "config.json", vision_config_to_json(wider));
  try {
    VisionEncoder::load(dir / "vit", torch::kCPU);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tensor 'vit.encoder.layer.0.intermediate.dense."), std::string::npos) << what;
    EXPECT_NE(what.find("config.json needs [64"), std::string::npos) << what;
  }
}

/// A w × h 8-bit RGB PNG of one colour.
void write_png(const std::filesystem::path& path, int w, int h, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(w * h * 3));
  for (std::size_t i = 0; i < pixels.size(); i += 3) pixels[i] = r, pixels[i + 1] = g, pixels[i + 2] = b;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(w);
  image.height = static_cast<png_uint_32>(h);
  image.format = PNG_FORMAT_RGB;
  ASSERT_TRUE(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr));
}

TEST(ImagesEmbed, ABankFromAListOfFilesWithZeroToMImagesPerItem) {
  test::TempDir dir;
  VisionConfig config;
  config.hidden_size = 16;
  config.num_layers = 1;
  config.num_heads = 2;
  config.intermediate_size = 32;
  config.image_size = 32;
  config.patch_size = 16;
  std::filesystem::create_directories(dir / "vit");
  test::write_file(dir / "vit" / "config.json", vision_config_to_json(config));  // no weights: a random model
  std::filesystem::create_directories(dir / "pics");
  write_png(dir / "pics" / "red.png", 40, 30, 250, 10, 10);
  write_png(dir / "pics" / "blue.png", 20, 20, 10, 10, 250);
  test::write_file(dir / "list.txt", "pics/red.png\tpics/blue.png\n\n" + (dir / "pics" / "red.png").string() + "\n");

  const ImageEmbedSummary s = embed_image_list({.model = dir / "vit", .list = dir / "list.txt", .out = dir / "bank.npy", .batch_size = 2});
  EXPECT_EQ(s.items, 3);
  EXPECT_EQ(s.items_with_images, 2);
  EXPECT_EQ(s.images, 3);
  EXPECT_EQ(s.slots, 2);
  const ImageBank bank = ImageBank::open(dir / "bank.npy", dir / "bank_count.npy");
  ASSERT_EQ(bank.rows(), 3);
  EXPECT_EQ(bank.dim(), 16);
  EXPECT_EQ(bank.image_slots(0, 3), (std::vector<std::int64_t>{0, 1}));
  EXPECT_TRUE(bank.image_slots(1, 3).empty());
  std::vector<float> red_first(16), red_again(16), blue(16);
  bank.copy_image(0, 0, red_first.data());
  bank.copy_image(2, 0, red_again.data());  // the same file by an absolute path, in another batch
  bank.copy_image(0, 1, blue.data());
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(red_first[i], red_again[i], 1e-5);
  EXPECT_NE(red_first, blue);

  test::write_file(dir / "bad.txt", "pics/red.png\npics/missing.png\n");
  try {
    embed_image_list({.model = dir / "vit", .list = dir / "bad.txt", .out = dir / "bad.npy"});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt:2: image 1: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing.png"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.npy"));
}

}  // namespace
}  // namespace xmc
