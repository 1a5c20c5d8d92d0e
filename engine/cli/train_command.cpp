// `xmc train`: train a method on a dataset, recording everything in the run store.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "engine/cli/command_context.h"
#include "engine/config/component_info.h"
#include "engine/core/error.h"
#include "engine/eval/metric_key.h"
#include "engine/session/default_store_path.h"
#include "engine/session/session.h"
#include "engine/train/rank_worker.h"

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
  bool restart = false;
  bool json = false;
  bool list_keys = false;
  int nproc = 1;
  int rank = 0;
  int world_size = 1;
  std::string master;
  int local_processes = 1;
  double timeout_minutes = 30;
};

/// A rank > 0 of a data-parallel job: trains its share, records nothing (rank 0 owns the run), and speaks
/// only of failures.
void run_worker(const TrainArgs& args) {
  if (args.master.empty())
    throw ConfigError("--rank " + std::to_string(args.rank) + " needs --master HOST:PORT (where rank 0 listens)");
  DistributedOptions options;
  options.rank = args.rank;
  options.world_size = args.world_size;
  parse_master_address(args.master, options);
  options.local_world_size = args.local_processes;
  options.timeout_minutes = args.timeout_minutes;
  try {
    run_rank_worker(options);
  } catch (const std::exception& e) {
    throw Error("rank " + std::to_string(args.rank) + ": " + e.what());
  }
}

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
  std::string methods;
  for (const MethodInfo& m : registered_method_infos()) methods += (methods.empty() ? "" : ", ") + m.name;
  auto* cmd = app.add_subcommand("train", "Train a run of any registered method (" + methods + ") on a dataset; every step lands in the run store");
  auto args = std::make_shared<TrainArgs>();
  cmd->add_option("--config", args->config, "JSON config (see datasets/configs/); keys may be nested or dotted");
  cmd->add_option("--set", args->sets, "Override a key: --set lr=0.001 --set sampler.type=cluster (repeatable)");
  cmd->add_option("--db", args->db, "Run store (SQLite)")->capture_default_str();
  auto* resume = cmd->add_option("--resume", args->resume, "Continue run ID from its latest checkpoint")->check(CLI::PositiveNumber);
  cmd->add_flag("--restart", args->restart, "With --resume: train the run again from step 0 (e.g. its checkpoint was lost), dropping what it recorded")
      ->needs(resume);
  cmd->add_flag("--json", args->json,
                "Print the final evaluation as one JSON line at the end: the primary mode's metrics, \"modes\" (every inference "
                "mode's), \"run_id\" and \"status\"; for irene each setting (zero_shot, zero_shot_base, generalized, generalized_base) "
                "under its name");
  cmd->add_option("--nproc", args->nproc,
                  "Train with N processes on this machine (data-parallel on Gloo: each takes a share of every batch and "
                  "its threads; the gradients are summed), e.g. --nproc 2")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--rank", args->rank, "Multi-host: this process's rank (0 owns the run and takes --config; others need only --master)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--world-size", args->world_size, "Multi-host: the number of processes in the job")->check(CLI::Range(1, 4096));
  cmd->add_option("--master", args->master, "Multi-host: HOST:PORT where rank 0 listens for the others");
  cmd->add_option("--local-processes", args->local_processes, "Multi-host: processes of the job on this host (they share its cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--timeout-minutes", args->timeout_minutes, "Multi-process: how long a rank waits for the others before the job fails")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--list-keys", args->list_keys,
                "List the config keys by group with defaults and meaning (with --config/--set: only those that apply)");
  cmd->footer(
      "Examples:\n"
      "  xmc train --config datasets/configs/dexml-bow-wordnet.json --db runs.sqlite\n"
      "  xmc train --config datasets/configs/ngame-bow-wordnet.json --set epochs=5 --json\n"
      "  xmc train --resume 3 --db runs.sqlite\n"
      "  xmc train --config datasets/configs/dexml-bow-wordnet.json --nproc 2\n"
      "  multi-host: xmc train --config c.json --rank 0 --world-size 2 --master 10.0.0.1:29500   (on 10.0.0.1)\n"
      "              xmc train --rank 1 --world-size 2 --master 10.0.0.1:29500                  (on the other host)\n"
      "Ctrl-C stops cleanly with a checkpoint (an evaluation under way is dropped); --resume continues from it.");
  cmd->callback([args, &context] {
    if (args->list_keys) {
      if (args->config.empty() && args->sets.empty()) return print_keys(nullptr);
      TrainConfig config = args->config.empty() ? TrainConfig{} : load_train_config(args->config);
      apply_config_overrides(config, args->sets);
      return print_keys(&config);
    }
    if (args->rank > 0) {
      if (!args->config.empty() || !args->sets.empty() || args->resume > 0 || args->nproc > 1)
        throw ConfigError("--rank " + std::to_string(args->rank) +
                          ": a worker takes the config (and a resume's checkpoint) from rank 0; give only --world-size and --master");
      return run_worker(*args);
    }
    if (args->resume <= 0 && args->config.empty() && args->sets.empty())
      throw ConfigError("give --config FILE (and/or --set key=value), or --resume ID");
    TrainingProcesses processes;
    processes.local = args->nproc;
    processes.timeout_minutes = args->timeout_minutes;
    if (args->world_size > 1) {
      processes.multi_host.world_size = args->world_size;
      processes.multi_host.local_world_size = args->local_processes;
      if (args->master.empty()) throw ConfigError("--world-size " + std::to_string(args->world_size) + " needs --master HOST:PORT for rank 0 to listen on");
      parse_master_address(args->master, processes.multi_host);
    }
    Session session(args->db);
    RunHandle run = [&] {
      if (args->resume > 0) return session.resume_run(args->resume, args->sets, processes, args->restart);
      ConfigReadNotes notes;
      TrainConfig config = args->config.empty() ? TrainConfig{} : load_train_config(args->config, &notes);
      apply_config_overrides(config, args->sets, &notes);
      for (const std::string& notice : notes.renamed) std::fprintf(stderr, "notice: %s\n", notice.c_str());
      for (const std::string& notice : refuse_inapplicable_keys(notes.keys, config)) std::fprintf(stderr, "notice: %s\n", notice.c_str());
      return session.start_run(std::move(config), processes);
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
    // A method built on another run (IRENE) evaluates settings rather than modes: every one under its name.
    const bool settings = static_cast<bool>(method_info(run.config().method).base_run);
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
      // The headline numbers say whose they are: the primary inference mode's (UniDEC's concat, NGAME's fused, ...).
      const std::string line = percent_line(result.metrics.metrics);
      const std::string mode = result.modes.empty() ? std::string() : " (" + result.modes.front().first + ")";
      std::printf("run %lld %s%s%s%s\n", static_cast<long long>(run.run_id()),
                  result.outcome == RunOutcome::Completed ? "completed" : "stopped", line.empty() ? "" : mode.c_str(), line.empty() ? "" : ": ",
                  line.c_str());
    }
    if (result.outcome == RunOutcome::Stopped && args->json == false) {
      // Stopped by max_steps, a resume must lift it (0 = no limit) or it stops again at once.
      const bool by_max_steps = !g_interrupted.load() && run.config().max_steps > 0;
      std::fprintf(stderr, "resume with: xmc train --resume %lld --db %s%s%s\n", static_cast<long long>(run.run_id()), args->db.c_str(),
                   by_max_steps ? " --set max_steps=0" : "", args->nproc > 1 ? (" --nproc " + std::to_string(args->nproc)).c_str() : "");
    }
    // Stopped by Ctrl-C: the run is safe, but the command did not do what it was asked (exit code 130).
    if (g_interrupted.load()) throw Cancelled();
  });
}

}  // namespace xmc::cli
