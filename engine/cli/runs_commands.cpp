// `xmc runs list|show|rename|tag|note|delete`: the run store from the command line.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "engine/records/evaluation_modes.h"
#include "engine/cli/command_context.h"
#include "engine/core/error.h"
#include "engine/session/default_store_path.h"
#include "engine/session/session.h"
#include "engine/session/run_filter_values.h"
#include "engine/session/run_import.h"
#include "engine/session/store_repair.h"
#include "engine/core/regular_file.h"

namespace xmc::cli {
namespace {

nlohmann::json run_json(const RunInfo& r) {
  return {{"id", r.id},         {"name", r.name},     {"status", to_string(r.status)}, {"created", r.created},
          {"updated", r.updated}, {"dataset", r.dataset_path}, {"dataset_fingerprint", r.dataset_fingerprint},
          {"code_version", r.code_version}, {"host", r.host}, {"device", r.device}, {"last_error", r.last_error},
          {"notes", r.notes}, {"tags", r.tags}};
}

/// Seconds since the Unix epoch of an ISO-8601 UTC time as the store writes it ("2025-01-31T12:00:00.123Z").
double iso_seconds(const std::string& iso) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6)
    return std::nan("");
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + ms / 1000.0;
}

/// "42 s", "12 min", "3.5 h"; "" when unknown.
std::string duration_text(double seconds) {
  if (!(seconds >= 0)) return "";
  char text[32];
  if (seconds < 60)
    std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds < 3600)
    std::snprintf(text, sizeof text, "%.0f min", seconds / 60);
  else
    std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  return text;
}

/// `text` cut to `width` bytes with "..." (never inside a UTF-8 character).
std::string fitted(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  std::size_t cut = width - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

/// The run's method and the last name of its dataset folder, from its stored config.
std::pair<std::string, std::string> method_and_dataset(const RunInfo& r) {
  std::string method = "?";
  try {
    const auto config = nlohmann::json::parse(r.config_json);
    if (config.contains("method") && config["method"].is_string()) method = config["method"].get<std::string>();
  } catch (const nlohmann::json::exception&) {
  }
  std::filesystem::path folder(r.dataset_path);
  if (!folder.has_filename()) folder = folder.parent_path();
  return {method, folder.filename().string()};
}

}  // namespace

void add_runs_commands(CLI::App& app, CommandContext& context) {
  auto* runs = app.add_subcommand("runs", "List, inspect, rename, tag, annotate and delete stored runs");
  runs->footer("Examples:\n  xmc runs --db runs.sqlite list\n  xmc runs --db runs.sqlite show 3 --json\n"
               "  xmc runs --db runs.sqlite rename 3 \"dexml bow, tau 0.05\"\n  xmc runs --db runs.sqlite tag 3 baseline\n"
               "  xmc runs --db runs.sqlite note 3 \"tau 0.05 overfits the head\"\n  xmc runs --db runs.sqlite delete 3 --yes");
  runs->require_subcommand(1);
  auto db = std::make_shared<std::string>(default_run_store_path().string());
  // What an import or export did, one line per run.
  auto print_imported = [](const ImportedRuns& done, const std::string& into) {
    for (const auto& [from, to] : done.copied) std::printf("run %lld -> run %lld\n", static_cast<long long>(from), static_cast<long long>(to));
    for (const std::int64_t id : done.already_here) std::printf("run %lld: already in %s (skipped)\n", static_cast<long long>(id), into.c_str());
    std::printf("%zu run(s) copied into %s, %zu already there\n", done.copied.size(), into.c_str(), done.already_here.size());
  };
  runs->add_option("--db", *db, "Run store (SQLite); default $XMC_DB or ~/.local/share/xmc-workbench/runs.sqlite")
      ->capture_default_str();

  {
    auto* cmd = runs->add_subcommand("list", "List runs, newest first");
    auto json = std::make_shared<bool>(false);
    auto where = std::make_shared<std::string>();
    cmd->add_flag("--json", *json, "Print one JSON array as the last line");
    cmd->add_option("--where", *where,
                    "Only the runs an expression lets through: config keys, metrics (fractions, or 45%) and the fields id, name, status, "
                    "method, dataset, tags, notes, compared with == != < <= > >= or in, joined with and, or, not");
    cmd->footer("Examples:\n  xmc runs --db runs.sqlite list\n  xmc runs list --where 'method == \"unidec\" and P@1 > 0.6'\n"
                "  xmc runs list --where '\"baseline\" in tags or lr < 0.001'");
    cmd->callback([db, json, where, &context] {
      std::optional<RunFilter> filter;
      if (!where->empty()) {
        try {
          filter = RunFilter::parse(*where);
        } catch (const FilterError& e) {
          throw ConfigError(std::string("--where: ") + e.what());
        }
      }
      require_existing_run_store(*db);
      Session session(*db);
      session.reap_orphaned_runs();
      std::vector<RunInfo> all = session.list_runs();
      if (filter) std::erase_if(all, [&](const RunInfo& r) { return !run_passes(*filter, r, session.evaluations(r.id)); });
      if (*json) {
        nlohmann::json array = nlohmann::json::array();
        for (const auto& r : all) array.push_back(run_json(r));
        context.print_json(array);
        return;
      }
      // One line a run: what it is (method, dataset), where it stands (status, time) and how good it is (the
      // primary mode's final P@1 and P@5, and which mode that is: runs of different methods rank differently),
      // then tags and name. Names fit up to kNameWidth.
      constexpr std::size_t kNameWidth = 48;
      std::size_t width = 4;
      for (const auto& r : all) width = std::max(width, std::min(kNameWidth, r.name.size()));
      std::printf("%5s  %-10s  %-8s  %-16s  %8s  %6s  %6s  %-7s  %-20s  %s\n", "id", "status", "method", "dataset", "duration", "P@1", "P@5",
                  "mode", "tags", "name");
      for (const auto& r : all) {
        const auto [method, dataset] = method_and_dataset(r);
        const bool live = r.status == RunStatus::Running || r.status == RunStatus::Paused;
        const double end = live ? std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() : iso_seconds(r.updated);
        const auto evaluations = session.evaluations(r.id);
        const double p1 = final_value(evaluations, "P@1"), p5 = final_value(evaluations, "P@5");
        const auto percent = [](double v) {
          char text[16];
          std::snprintf(text, sizeof text, std::isnan(v) ? "-" : "%.2f", 100 * v);
          return std::string(text);
        };
        const std::string mode = final_primary_mode(evaluations);
        std::printf("%5lld  %-10s  %-8s  %-16s  %8s  %6s  %6s  %-7s  %-20s  %s\n", static_cast<long long>(r.id), to_string(r.status).c_str(),
                    fitted(method, 8).c_str(), fitted(dataset, 16).c_str(), duration_text(end - iso_seconds(r.created)).c_str(),
                    percent(p1).c_str(), percent(p5).c_str(), fitted(mode.empty() ? "-" : mode, 7).c_str(), fitted(joined(r.tags), 20).c_str(),
                    fitted(r.name, width).c_str());
        if (!r.last_error.empty()) std::printf("%5s  error: %s\n", "", fitted(r.last_error, 160).c_str());
      }
    });
  }
  {
    auto* cmd = runs->add_subcommand("show", "Show a run: config, status, latest metrics, its log of phases and decisions");
    auto id = std::make_shared<std::int64_t>(0);
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Run id")->required();
    cmd->add_flag("--json", *json, "Print one JSON object as the last line");
    cmd->footer("Example:\n  xmc runs show 3 --json");
    cmd->callback([db, id, json, &context] {
      require_existing_run_store(*db);
      const Session session(*db);
      const RunInfo r = session.get_run(*id);
      nlohmann::json j = run_json(r);
      j["config"] = nlohmann::json::parse(r.config_json);
      // Values the run chose while training, which it used instead of the configured ones.
      nlohmann::json chosen = nlohmann::json::object();
      const nlohmann::json flat_config = j["config"].is_object() ? j["config"].flatten() : nlohmann::json::object();
      for (const ChosenSetting& c : session.chosen_settings(*id)) {
        std::string pointer = "/" + c.key;
        std::replace(pointer.begin(), pointer.end(), '.', '/');
        const nlohmann::json configured = flat_config.contains(pointer) ? flat_config[pointer]
                                          : j["config"].is_object() && j["config"].contains(c.key) ? j["config"][c.key]
                                                                                                  : nlohmann::json();
        chosen[c.key] = {{"value", c.value}, {"configured", configured}, {"step", c.step}};
      }
      j["chosen_settings"] = chosen;
      // What the training process used of the machine (null where it was never sampled).
      const SystemUse use = session.system_use(*id);
      auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
      j["system_use"] = {{"peak_memory_gb", optional(use.peak_memory_gb)},
                         {"mean_cpu_cores", optional(use.mean_cpu_cores)},
                         {"max_cpu_cores", optional(use.max_cpu_cores)}};
      nlohmann::json metrics = nlohmann::json::object();
      double last_epoch = -1;
      const auto evaluations = without_primary_copies(session.evaluations(*id));
      for (const auto& e : evaluations) last_epoch = std::max(last_epoch, e.epoch);
      for (const auto& e : evaluations)
        if (e.epoch == last_epoch) metrics[e.metric] = e.value;
      j["final_metrics"] = metrics;
      // The run's log: phases and decisions ("UniDEC: concat weight 0.8 ..."), with the step each came at.
      nlohmann::json log = nlohmann::json::array();
      for (const LogLine& line : session.run_log(*id)) log.push_back({{"step", line.step}, {"time", line.wall_time}, {"message", line.message}});
      j["log"] = log;
      if (*json) {
        context.print_json(j);
      } else {
        std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      }
    });
  }
  {
    auto* cmd = runs->add_subcommand("rename", "Rename a run");
    auto id = std::make_shared<std::int64_t>(0);
    auto name = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Run id")->required();
    cmd->add_option("NAME", *name, "New name")->required();
    cmd->footer("Example:\n  xmc runs rename 3 \"dexml bow, tau 0.05\"");
    cmd->callback([db, id, name] {
      require_existing_run_store(*db);
      Session(*db).rename_run(*id, *name);
    });
  }
  {
    auto* cmd = runs->add_subcommand("tag", "Add tags to a run (or remove them with --remove)");
    auto id = std::make_shared<std::int64_t>(0);
    auto tags = std::make_shared<std::vector<std::string>>();
    auto remove = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Run id")->required();
    cmd->add_option("TAG", *tags, "Tags (1 to 64 characters each)")->required();
    cmd->add_flag("--remove", *remove, "Remove the tags instead");
    cmd->footer("Examples:\n  xmc runs tag 3 baseline bibtex-sweep\n  xmc runs tag 3 baseline --remove");
    cmd->callback([db, id, tags, remove] {
      require_existing_run_store(*db);
      Session session(*db);
      if (*remove)
        session.remove_run_tags(*id, *tags);
      else
        session.add_run_tags(*id, *tags);
      std::printf("run %lld tags: %s\n", static_cast<long long>(*id), joined(session.get_run(*id).tags).c_str());
    });
  }
  {
    auto* cmd = runs->add_subcommand("note", "Set a run's notes (replacing them; \"\" clears them), or print them");
    auto id = std::make_shared<std::int64_t>(0);
    auto text = std::make_shared<std::string>();
    auto file = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Run id")->required();
    auto* text_option = cmd->add_option("TEXT", *text, "The notes");
    cmd->add_option("--file", *file, "Read the notes from this file")->excludes(text_option);
    cmd->footer("Examples:\n  xmc runs note 3 \"tau 0.05 overfits the head; try 0.1\"\n  xmc runs note 3 --file notes.md\n  xmc runs note 3");
    cmd->callback([db, id, text, file, text_option] {
      require_existing_run_store(*db);
      Session session(*db);
      if (!file->empty()) {
        require_regular_file(*file);
        std::ifstream in(*file, std::ios::binary);
        if (!in) throw InputError(*file, "cannot open file for reading");
        std::stringstream content;
        content << in.rdbuf();
        session.set_run_notes(*id, content.str());
      } else if (text_option->count() > 0) {
        session.set_run_notes(*id, *text);
      }
      std::printf("%s\n", session.get_run(*id).notes.c_str());
    });
  }
  {
    auto* cmd = runs->add_subcommand("import", "Copy runs of another store (another machine's) into this one, with everything recorded for them");
    auto source = std::make_shared<std::string>();
    auto ids = std::make_shared<std::vector<std::int64_t>>();
    cmd->add_option("SOURCE", *source, "The run store to copy from (its runs are only read; an older store is brought to this schema first, as any use of it does)")->required();
    cmd->add_option("--runs", *ids, "Run ids in SOURCE (default: all); a run already here, by its identity, is skipped")->delimiter(',');
    cmd->footer("Examples:\n  xmc runs --db laptop.sqlite import gpu-server.sqlite\n  xmc runs --db laptop.sqlite import gpu-server.sqlite --runs 4,7");
    cmd->callback([db, source, ids, print_imported] { print_imported(import_runs(*db, *source, *ids), *db); });
  }
  {
    auto* cmd = runs->add_subcommand("export", "Write runs of this store into a new, self-contained store (to take to another machine)");
    auto ids = std::make_shared<std::vector<std::int64_t>>();
    auto out = std::make_shared<std::string>();
    cmd->add_option("--runs", *ids, "Run ids (default: all)")->delimiter(',');
    cmd->add_option("--out", *out, "The new store to write (must not exist)")->required();
    cmd->footer("Example:\n  xmc runs --db runs.sqlite export --runs 4,7 --out for-the-paper.sqlite");
    cmd->callback([db, ids, out, print_imported] {
      require_existing_run_store(*db);
      print_imported(export_runs(*db, *ids, *out), *out);
    });
  }
  {
    auto* cmd = runs->add_subcommand("repair", "Copy what can be read of a damaged run store into a new one (the damaged one is only read)");
    auto out = std::make_shared<std::string>();
    cmd->add_option("--out", *out, "The new store to write (must not exist)")->required();
    cmd->footer("Example:\n  xmc runs --db damaged.sqlite repair --out repaired.sqlite");
    cmd->callback([db, out] {
      const RepairReport report = repair_run_store(*db, *out);
      for (const RepairedTable& table : report.tables) {
        if (table.missing) std::printf("%-16s missing in the damaged store\n", table.name.c_str());
        else if (table.lost < 0) std::printf("%-16s %lld rows copied; the rest could not be found\n", table.name.c_str(), static_cast<long long>(table.copied));
        else std::printf("%-16s %lld rows copied%s\n", table.name.c_str(), static_cast<long long>(table.copied),
                         table.lost > 0 ? (", " + std::to_string(table.lost) + " unreadable rows left out").c_str() : "");
      }
      for (const std::int64_t run : report.recovered_runs)
        std::printf("run %lld lost its row: restored as \"recovered run %lld\" (failed)\n", static_cast<long long>(run), static_cast<long long>(run));
      std::printf("%lld run folders carried over; the repaired store is %s (the damaged one is unchanged)\n",
                  static_cast<long long>(report.run_folders), out->c_str());
    });
  }
  {
    auto* cmd = runs->add_subcommand("delete", "Delete a run and everything recorded for it");
    auto id = std::make_shared<std::int64_t>(0);
    auto yes = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Run id")->required();
    auto force = std::make_shared<bool>(false);
    cmd->add_flag("--yes", *yes, "Confirm the deletion (required: it cannot be undone)");
    cmd->add_flag("--force", *force, "Also delete a run that is still training (its trainer then fails)");
    cmd->footer("Example:\n  xmc runs delete 3 --yes");
    cmd->callback([db, id, yes, force] {
      require_existing_run_store(*db);
      Session session(*db);
      session.reap_orphaned_runs();  // a run whose trainer died is not "running" any more
      const RunInfo r = session.get_run(*id);
      if (!*yes) throw ConfigError("refusing to delete run " + std::to_string(*id) + " ('" + r.name + "') without --yes");
      if ((r.status == RunStatus::Running || r.status == RunStatus::Paused) && !*force)
        throw ConfigError("run " + std::to_string(*id) + " ('" + r.name + "') is still " + to_string(r.status) + " (pid " +
                          std::to_string(r.pid) + " on " + r.host + "); stop it first, or pass --force");
      session.delete_run(*id);
      std::printf("deleted run %lld ('%s') and its files\n", static_cast<long long>(*id), r.name.c_str());
    });
  }
}

}  // namespace xmc::cli
