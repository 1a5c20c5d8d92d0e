#pragma once
// A trained run's encoder as a Hugging Face model folder (plain C++; `xmc export`): a decoder's LoRA adapters
// merged into its weights (config.json + model.safetensors in transformers' layout, the tokenizer's files
// beside them), so that transformers, sentence-transformers or any other reader of the format loads the
// fine-tuned model without this project. The heads above the encoder are not part of that format; they go to
// xmc_heads.safetensors beside it.
#include <cstdint>
#include <filesystem>
#include <string>

namespace xmc {

struct ExportedModel {
  std::filesystem::path folder;
  std::string description;  ///< e.g. "qwen2 decoder, 24 layers, LoRA merged into 168 projections"
};

/// Writes run `run_id`'s encoder to `out` (created; an existing non-empty folder is refused). Throws
/// ConfigError for a run whose encoder has no such format (bow), InputError naming files otherwise.
ExportedModel export_run_model(const std::filesystem::path& db_path, std::int64_t run_id, const std::filesystem::path& out);

}  // namespace xmc
