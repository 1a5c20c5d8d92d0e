// A BERT-family encoder from a run's config: a local Hugging Face folder (config.json, model.safetensors,
// vocab.txt; config.json alone gives a randomly initialised model) and its WordPiece tokenizer.
#include "engine/model/autocast.h"
#include "engine/model/bert/bert_encoder.h"
#include "engine/model/transformer_options.h"
#include "engine/model/bert/bert_options.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/encoder_options.h"
#include "engine/model/image_fusion.h"
#include "engine/text/wordpiece_text_tokenizer.h"

namespace xmc {

BuiltEncoder make_bert_encoder(const ComponentConfig& config, const std::vector<std::string>& /*train_texts*/,
                               const std::filesystem::path& /*run_dir*/) {
  const EncoderOptions& common = config.get<EncoderOptions>();
  const TransformerOptions& bert = config.get<TransformerOptions>();
  const auto& folder = common.path;
  BertEncoderOptions options;
  options.pooling = bert.pooling == "cls" ? BertPooling::cls : BertPooling::mean;
  options.max_len = bert.max_len;
  options.device = parse_device(config.run.device);
  options.dropout = common.dropout;
  options.autocast = parse_precision(bert.precision, "encoder.precision");
  const std::string& packing = config.get<BertOptions>().packing;
  options.packing = packing == "on" ? BertPacking::on : packing == "off" ? BertPacking::off : BertPacking::automatic;
  std::shared_ptr<BertEncoderImpl> encoder;
  std::string description;
  if (std::filesystem::exists(folder / "model.safetensors")) {
    encoder = load_bert_encoder(folder, options).ptr();
    description = "bert encoder from " + folder.string();
  } else {
    const BertConfig bert_config = read_bert_config(folder / "config.json");
    encoder = std::make_shared<BertEncoderImpl>(bert_config, options);
    description = "bert encoder, randomly initialised from " + (folder / "config.json").string();
  }
  const ImageFusionOptions images = image_fusion_for(config);
  encoder->attach_images(images);
  description += describe_image_fusion(images);
  return {std::move(encoder), std::make_unique<WordPieceTextTokenizer>(WordPieceTokenizer::from_folder(folder, {.max_len = bert.max_len})), description};
}


}  // namespace xmc
