// `xmc labels`: add labels to a trained run by their text (zero-shot, or synthesized by IRENE when the run
// is an IRENE run or one is built on it), list and remove them. Added labels are kept in the run store and
// ranked by every later `xmc predict` and search of the run.
#include <chrono>
#include <cstdio>

#include "engine/cli/command_context.h"
#include "engine/core/error.h"
#include "engine/data/text_lines.h"
#include "engine/session/session.h"
#include "engine/session/default_store_path.h"

namespace xmc::cli {
namespace {

struct LabelsArgs {
  std::int64_t run = 0;
  std::string db = default_run_store_path().string();
  std::vector<std::string> texts;
  std::string file;
  std::int64_t id = 0;
  bool json = false;
};

void add_run_options(CLI::App* cmd, LabelsArgs& args) {
  cmd->add_option("--run", args.run, "Run id")->required();
  cmd->add_option("--db", args.db, "Run store (SQLite)")->capture_default_str();
  cmd->add_flag("--json", args.json, "Print the result as one JSON line");
}

}  // namespace

void add_labels_commands(CLI::App& app, CommandContext& context) {
  auto* labels = app.add_subcommand("labels", "Add labels to a trained run by their text; list and remove them");
  labels->require_subcommand(1);
  {
    auto* cmd = labels->add_subcommand("add", "Encode, synthesize (IRENE when there is one) and insert new labels");
    auto args = std::make_shared<LabelsArgs>();
    add_run_options(cmd, *args);
    cmd->add_option("--text", args->texts, "A new label's text (repeatable)");
    cmd->add_option("--file", args->file, "File with one new label text per line");
    cmd->footer("Examples:\n  xmc labels add --run 4 --text \"quantum chemistry: the study of molecules with quantum mechanics\"\n"
                "  xmc labels add --run 4 --file new_labels.txt --json");
    cmd->callback([args, &context] {
      std::vector<std::string> texts = args->texts;
      if (!args->file.empty())
        for (auto& t : read_text_lines(args->file)) texts.push_back(std::move(t));
      if (texts.empty()) throw ConfigError("give --text (repeatable) or --file with the new labels' texts");
      require_existing_run_store(args->db);
      Predictor predictor = Session(args->db).open_predictor(args->run, "", context.progress);
      const auto started = std::chrono::steady_clock::now();
      const std::int64_t first = predictor.add_labels(texts);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      if (args->json) {
        nlohmann::json j{{"run_id", args->run}, {"synthesized_by", predictor.synthesized_by()}, {"milliseconds", ms}, {"labels", nlohmann::json::array()}};
        for (std::size_t i = 0; i < texts.size(); ++i) j["labels"].push_back({{"label", first + static_cast<std::int64_t>(i)}, {"text", texts[i]}});
        context.print_json(j);
      } else {
        for (std::size_t i = 0; i < texts.size(); ++i)
          std::printf("added label %lld: %s\n", static_cast<long long>(first + static_cast<std::int64_t>(i)), texts[i].c_str());
        std::printf("vectors by %s, %.1f ms for %zu label(s)\n", predictor.synthesized_by().c_str(), ms, texts.size());
      }
    });
  }
  {
    auto* cmd = labels->add_subcommand("list", "List the labels added to a run");
    auto args = std::make_shared<LabelsArgs>();
    add_run_options(cmd, *args);
    cmd->footer("Example:\n  xmc labels list --run 4");
    cmd->callback([args, &context] {
      require_existing_run_store(args->db);
      const auto added = Session(args->db).added_labels(args->run);
      if (args->json) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& a : added) j.push_back({{"id", a.id}, {"text", a.text}, {"synthesized_by", a.synthesized_by}, {"created", a.created}});
        context.print_json(j);
        return;
      }
      if (added.empty()) std::printf("run %lld has no added labels\n", static_cast<long long>(args->run));
      for (const auto& a : added) std::printf("%5lld  %-20s  %-14s  %s\n", static_cast<long long>(a.id), a.created.c_str(), a.synthesized_by.c_str(), a.text.c_str());
    });
  }
  {
    auto* cmd = labels->add_subcommand("remove", "Remove an added label (by the id xmc labels list shows)");
    auto args = std::make_shared<LabelsArgs>();
    add_run_options(cmd, *args);
    cmd->add_option("--id", args->id, "The added label's id in xmc labels list")->required();
    cmd->footer("Example:\n  xmc labels remove --run 4 --id 2");
    cmd->callback([args] {
      require_existing_run_store(args->db);
      Session(args->db).remove_added_label(args->run, args->id);
      std::printf("removed added label %lld of run %lld\n", static_cast<long long>(args->id), static_cast<long long>(args->run));
    });
  }
}

}  // namespace xmc::cli
