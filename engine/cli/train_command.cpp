// `xmc train`: train a method on a dataset, recording everything in the run store.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "engine/cli/command_context.h"
#include "engine/core/error.h"
#include "engine/eval/metric_key.h"
#include "engine/store/default_store_path.h"
#include "engine/session/session.h"

namespace xmc::cli {
namespace {

std::atomic<RunHandle*> g_running{nullptr};
std::atomic<bool> g_interrupted{false};  ///< a Ctrl-C stopped the run

extern "C" void on_interrupt(int) {
  // First Ctrl-C: stop cleanly with a checkpoint. A second one kills as usual.
  if (RunHandle* run = g_running.load()) run->request_stop();
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);
}

std::string percent_line(const std::vector<std::pair<std::string, double>>& metrics) {
  std::string line;
  char buf[64];
  for (const auto& [name, value] : metrics) {
    if (!MetricKey::parse(name).is_primary()) continue;
    std::snprintf(buf, sizeof buf, "%s%s %.2f", line.empty() ? "" : "  ", name.c_str(), 100 * value);
    line += buf;
  }
  return line;
}

struct TrainArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string db = default_run_store_path().string();
  std::int64_t resume = 0;
  bool json = false;
  bool list_keys = false;
};

/// The key table by option group. With a config (--config/--set given), only the keys that matter for its
/// method, encoder, sampler, negatives and loss; without one, every key, each conditional one saying when
/// it applies.
void print_keys(const TrainConfig* config) {
  std::string group;
  for (const auto& k : train_config_keys()) {
    if (config != nullptr && !key_applies(k, *config)) continue;
    if (k.group != group) {
      group = k.group;
      std::printf("%s%s\n", group == train_config_keys().front().group ? "" : "\n", group.c_str());
    }
    std::string choices;
    for (const auto& c : k.choices) choices += (choices.empty() ? " {" : "|") + c;
    if (!choices.empty()) choices += "}";
    std::string condition;
    if (config == nullptr && !k.applies_when.empty()) {
      for (const KeyCondition& c : key_conditions(k)) {
        std::string values;
        for (const auto& v : c.values) values += (values.empty() ? "" : "|") + v;
        condition += (condition.empty() ? " [when " : " and ") + c.key + " = " + values;
      }
      condition += "]";
    }
    std::printf("  %-24s %-8s default %-22s %s%s%s\n", k.key.c_str(), k.type.c_str(), k.default_value.c_str(), k.description.c_str(),
                choices.c_str(), condition.c_str());
  }
}

}  // namespace

void add_train_command(CLI::App& app, CommandContext& context) {
  auto* cmd = app.add_subcommand("train", "Train DEXML, NGAME, UniDEC or DEPSL on a dataset; every step lands in the run store");
  auto args = std::make_shared<TrainArgs>();
  cmd->add_option("--config", args->config, "JSON config (see datasets/configs/); keys may be nested or dotted");
  cmd->add_option("--set", args->sets, "Override a key: --set lr=0.001 --set sampler.type=cluster (repeatable)");
  cmd->add_option("--db", args->db, "Run store (SQLite)")->capture_default_str();
  cmd->add_option("--resume", args->resume, "Continue run ID from its latest checkpoint")->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json,
                "Print the final evaluation as one JSON line at the end: the primary mode's metrics, \"modes\" (every inference "
                "mode's), \"run_id\" and \"status\"; for irene each setting (zero_shot, zero_shot_base, generalized, generalized_base) "
                "under its name");
  cmd->add_flag("--list-keys", args->list_keys,
                "List the config keys by group with defaults and meaning (with --config/--set: only those that apply)");
  cmd->footer(
      "Examples:\n"
      "  xmc train --config datasets/configs/dexml-bow-wordnet.json --db runs.sqlite\n"
      "  xmc train --config datasets/configs/ngame-bow-wordnet.json --set epochs=5 --json\n"
      "  xmc train --resume 3 --db runs.sqlite\n"
      "Ctrl-C stops cleanly with a checkpoint; --resume continues from it.");
  cmd->callback([args, &context] {
    if (args->list_keys) {
      if (args->config.empty() && args->sets.empty()) return print_keys(nullptr);
      TrainConfig config = args->config.empty() ? TrainConfig{} : load_train_config(args->config);
      apply_config_overrides(config, args->sets);
      return print_keys(&config);
    }
    if (args->resume <= 0 && args->config.empty() && args->sets.empty())
      throw ConfigError("give --config FILE (and/or --set key=value), or --resume ID");
    Session session(args->db);
    RunHandle run = [&] {
      if (args->resume > 0) return session.resume_run(args->resume, args->sets);
      TrainConfig config = args->config.empty() ? TrainConfig{} : load_train_config(args->config);
      apply_config_overrides(config, args->sets);
      return session.start_run(std::move(config));
    }();
    std::fprintf(stderr, "run %lld in %s\n", static_cast<long long>(run.run_id()), args->db.c_str());
    run.subscribe([](const TrainEvent& e) {
      switch (e.kind) {
        case TrainEvent::Kind::Phase:
          std::fprintf(stderr, "%s\n", e.message.c_str());
          break;
        case TrainEvent::Kind::Evaluation:
          std::printf("epoch %.2f: %s\n", e.epoch, percent_line(e.metrics).c_str());
          std::fflush(stdout);
          if (embeddings_collapsed(e.score_spread, e.score_mean))
            std::fprintf(stderr,
                         "warning: the embeddings collapsed: every label scores alike for every query (score spread %.4f, mean "
                         "cosine %.4f); lower lr or change the loss\n",
                         e.score_spread, e.score_mean);
          break;
        case TrainEvent::Kind::Stopped:
        case TrainEvent::Kind::Failed:
          std::fprintf(stderr, "%s\n", e.message.c_str());
          break;
        default:
          break;
      }
    });
    g_interrupted.store(false);
    g_running.store(&run);
    std::signal(SIGINT, on_interrupt);
    TrainResult result;
    try {
      result = run.run(context.progress);
    } catch (...) {
      g_running.store(nullptr);
      throw;
    }
    g_running.store(nullptr);
    std::signal(SIGINT, SIG_DFL);
    const bool settings = run.config().method == "irene";  // IRENE: every evaluation setting under its name
    if (args->json && settings) {
      nlohmann::json j = nlohmann::json::object();
      j["run_id"] = run.run_id();
      for (const auto& [mode, evaluation] : result.modes)
        for (const auto& [name, value] : evaluation.metrics) j[mode][name] = value;
      j["status"] = result.outcome == RunOutcome::Completed ? "completed" : "stopped";
      context.print_json(j);
    } else if (args->json) {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& [name, value] : result.metrics.metrics) j[name] = value;
      for (const auto& [name, bars] : result.metrics.deciles) j["deciles"][name] = bars;
      // Every inference mode under its name, with the same metric keys as the top level (the primary mode's).
      for (const auto& [mode, evaluation] : result.modes)
        for (const auto& [name, value] : evaluation.metrics) j["modes"][mode][name] = value;
      j["run_id"] = run.run_id();
      j["status"] = result.outcome == RunOutcome::Completed ? "completed" : "stopped";
      context.print_json(j);
    } else if (settings) {
      std::printf("run %lld %s\n", static_cast<long long>(run.run_id()), result.outcome == RunOutcome::Completed ? "completed" : "stopped");
      for (const auto& [mode, evaluation] : result.modes) std::printf("  %-17s %s\n", mode.c_str(), percent_line(evaluation.metrics).c_str());
    } else {
      const std::string line = percent_line(result.metrics.metrics);
      std::printf("run %lld %s%s%s\n", static_cast<long long>(run.run_id()),
                  result.outcome == RunOutcome::Completed ? "completed" : "stopped", line.empty() ? "" : ": ", line.c_str());
    }
    if (result.outcome == RunOutcome::Stopped && args->json == false) {
      // Stopped by max_steps, a resume must lift it (0 = no limit) or it stops again at once.
      const bool by_max_steps = !g_interrupted.load() && run.config().max_steps > 0;
      std::fprintf(stderr, "resume with: xmc train --resume %lld --db %s%s\n", static_cast<long long>(run.run_id()), args->db.c_str(),
                   by_max_steps ? " --set max_steps=0" : "");
    }
    // Stopped by Ctrl-C: the run is safe, but the command did not do what it was asked (exit code 130).
    if (g_interrupted.load()) throw Cancelled();
  });
}

}  // namespace xmc::cli
