// `xmc images embed`: an image bank made by a frozen vision encoder (ViT or SigLIP) from a list of image files.
#include <cstdio>

#include "engine/cli/command_context.h"
#include "engine/session/image_bank_maker.h"

namespace xmc::cli {

void add_images_command(CLI::App& app, CommandContext& context) {
  auto* images = app.add_subcommand("images", "Image banks for datasets (ViXML): embed image files with a frozen vision encoder");
  images->require_subcommand(1);
  auto options = std::make_shared<ImageEmbedOptions>();
  auto* cmd = images->add_subcommand("embed", "Embed each item's images (one line per item, paths tab-separated) into a bank [rows, M, m]");
  cmd->add_option("--model", options->model, "ViT or SigLIP folder: config.json (+ model.safetensors; without weights, a random model), preprocessor_config.json")
      ->required();
  cmd->add_option("--list", options->list, "One line per item: its image files, tab-separated (an empty line: no images); relative to the list's folder")
      ->required();
  cmd->add_option("--out", options->out, "The bank to write (.npy); its counts go beside it as NAME_count.npy")->required();
  cmd->add_option("--max-images", options->max_images, "Images per item at most (M)")->capture_default_str();
  cmd->add_option("--batch-size", options->batch_size, "Images per forward pass")->capture_default_str();
  cmd->add_option("--device", options->device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", options->threads, "CPU threads (0 = every core)")->capture_default_str();
  cmd->footer("The dataset's banks are images/trn.npy, images/tst.npy and images/lbl.npy, row for row with its texts:\n"
              "  xmc images embed --model models/vit-base-patch16-224-in21k --list data/mm/images/trn_files.txt --out data/mm/images/trn.npy\n"
              "  xmc images embed --model models/siglip2-base-patch16-224 --list data/mm/images/lbl_files.txt --out data/mm/images/lbl.npy");
  cmd->callback([options, &context] {
    const ImageEmbedSummary s = embed_image_list(*options, context.progress);
    std::printf("wrote %s: %lld items (%lld with images), %lld images of %lld numbers, M = %lld; %s; %.1f s, %.1f images/s\n", options->out.string().c_str(),
                static_cast<long long>(s.items), static_cast<long long>(s.items_with_images), static_cast<long long>(s.images),
                static_cast<long long>(s.dim), static_cast<long long>(s.slots), s.model.c_str(), s.seconds,
                s.seconds > 0 ? static_cast<double>(s.images) / s.seconds : 0.0);
  });
}

}  // namespace xmc::cli
