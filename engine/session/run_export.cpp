#include "engine/session/run_export.h"

#include <torch/torch.h>

#include "engine/core/error.h"
#include "engine/method/trained_run.h"
#include "engine/model/bert/bert_encoder.h"
#include "engine/model/decoder/decoder_encoder.h"
#include "engine/model/decoder/decoder_options.h"
#include "engine/model/encoder_options.h"
#include "engine/model/hf_weights.h"
#include "engine/model/safetensors_file.h"
#include "engine/text/byte_level_bpe.h"

namespace xmc {
namespace {

/// The heads and other trained tensors that are not the encoder's, float32, under their module names.
void write_heads(torch::nn::Module& model, torch::nn::Module& encoder, const std::filesystem::path& file) {
  std::set<const void*> encoder_tensors;
  for (const auto& p : encoder.parameters()) encoder_tensors.insert(p.unsafeGetTensorImpl());
  std::vector<torch::Tensor> keep;
  std::vector<TensorToWrite> tensors;
  for (const auto& item : model.named_parameters()) {
    if (encoder_tensors.count(item.value().unsafeGetTensorImpl())) continue;
    keep.push_back(item.value().detach().to(torch::kCPU, torch::kFloat).contiguous());
    const torch::Tensor& t = keep.back();
    tensors.push_back({item.key(), SafeDtype::F32, {t.sizes().begin(), t.sizes().end()},
                       {static_cast<const std::byte*>(t.data_ptr()), static_cast<std::size_t>(t.nbytes())}});
  }
  if (!tensors.empty()) write_safetensors(file, tensors, {{"format", "pt"}, {"producer", "xmc export: heads above the encoder"}});
}

void copy_if_present(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code error;
  if (std::filesystem::is_regular_file(from, error)) std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

}  // namespace

ExportedModel export_run_model(const std::filesystem::path& db_path, std::int64_t run_id, const std::filesystem::path& out) {
  std::error_code error;
  if (std::filesystem::exists(out, error) && !std::filesystem::is_empty(out, error))
    throw ConfigError("--out: " + out.string() + " exists and is not empty; give a new folder");
  TrainedRun run = load_trained_run(db_path, run_id, "cpu");
  torch::nn::Module& model = run.method->module();
  const EncoderOptions& encoder_options = run.config.get<EncoderOptions>();
  ExportedModel exported{out, ""};
  torch::NoGradGuard no_grad;
  if (auto* decoder = find_encoder<DecoderEncoderImpl>(model)) {
    // An untied LM head is not trained here: the base model's goes with the merged weights.
    torch::Tensor lm_head;
    if (!decoder->config().tie_word_embeddings && HfWeights::present(encoder_options.path)) {
      const HfWeights base = HfWeights::open(encoder_options.path);
      const SafetensorsFile* file = nullptr;
      if (const TensorInfo* info = base.find("lm_head.weight", &file)) lm_head = safetensors_tensor(*file, *info);
    }
    std::filesystem::create_directories(out);
    save_decoder_model(*decoder, out, lm_head);
    const DecoderOptions& options = run.config.get<DecoderOptions>();
    const std::filesystem::path tokenizer = tokenizer_json_of(options.tokenizer.empty() ? encoder_options.path : options.tokenizer);
    copy_if_present(tokenizer, out / "tokenizer.json");
    copy_if_present(tokenizer.parent_path() / "tokenizer_config.json", out / "tokenizer_config.json");
    write_heads(model, *decoder, out / "xmc_heads.safetensors");
    std::int64_t adapted = 0;
    for (const auto& child : decoder->modules(false))
      if (const auto* linear = dynamic_cast<const LoraLinearImpl*>(child.get()); linear && linear->has_adapter()) ++adapted;
    exported.description = decoder->config().model_type() + " decoder, " + std::to_string(decoder->config().num_layers) + " layers, " +
                           (adapted > 0 ? "LoRA merged into " + std::to_string(adapted) + " projections" : "every weight trained");
  } else if (auto* bert = find_encoder<BertEncoderImpl>(model)) {
    std::filesystem::create_directories(out);
    save_bert_encoder(BertEncoder(std::dynamic_pointer_cast<BertEncoderImpl>(bert->shared_from_this())), bert->config(), out);
    copy_if_present(encoder_options.path / "vocab.txt", out / "vocab.txt");
    copy_if_present(encoder_options.path / "tokenizer_config.json", out / "tokenizer_config.json");
    write_heads(model, *bert, out / "xmc_heads.safetensors");
    exported.description = "bert encoder, " + std::to_string(bert->config().num_layers) + " layers";
  } else {
    throw ConfigError("run " + std::to_string(run_id) + " has a " + encoder_options.type +
                      " encoder, which has no Hugging Face model format; export takes bert and decoder runs");
  }
  return exported;
}

}  // namespace xmc
