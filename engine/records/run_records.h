#pragma once
// The plain records a run store holds (runs, scalars, evaluations, decile tables, artifacts, t-SNE
// snapshots): value types shared by the store, the session facade, the CLI and the GUI. No SQLite here.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xmc {

/// Lifecycle of a run. Stored as the lower-case name ("running", ...).
enum class RunStatus { Created, Running, Paused, Completed, Failed, Stopped };

/// "created", "running", "paused", "completed", "failed" or "stopped".
std::string to_string(RunStatus status);
/// Inverse of to_string; throws xmc::Error naming the text for anything else.
RunStatus run_status_from_string(std::string_view text);

/// One row of the runs table. Times are ISO-8601 UTC text ("2025-01-31T12:00:00.123Z").
struct RunInfo {
  std::int64_t id = 0;              ///< unique, never reused; larger = created later
  std::string name;                 ///< user-visible name ("run ID" when created without one)
  std::string created;              ///< when create_run() was called
  std::string updated;              ///< last change of status, name or error
  RunStatus status = RunStatus::Created;
  std::string config_json;          ///< full configuration of the run, a JSON document
  std::string dataset_path;         ///< dataset folder the run trains on
  std::string dataset_fingerprint;  ///< content hash of that dataset when the run was created
  std::string code_version;         ///< xmc::kCodeVersion of the program that created the run
  std::string host;                 ///< host name of the process that owns the run
  std::string device;               ///< torch device, e.g. "cpu" or "cuda:0"
  std::string last_error;           ///< why the run failed; kept when it is resumed; "" when none
  std::string heartbeat;            ///< last sign of life from the owning process; "" when none
  std::int64_t pid = 0;             ///< process id of the owner on `host`
  std::string notes;                ///< the user's notes on the run (free text, "" when none)
  std::vector<std::string> tags;    ///< the user's tags, sorted
};

/// What create_run() needs; the store fills in times, status, host, pid and code version.
struct NewRun {
  std::string name;                 ///< "" names the run "run ID"
  std::string config_json = "{}";   ///< must be valid JSON ("" is stored as "{}")
  std::string dataset_path;
  std::string dataset_fingerprint;
  std::string device = "cpu";
};

/// One logged value (loss, lr, throughput, ...) at a training step.
struct ScalarPoint {
  std::int64_t step = 0;   ///< global optimiser step
  double epoch = 0;        ///< fractional epoch at this step
  std::string key;         ///< e.g. "loss", "lr", "samples_per_s"; must not be empty
  double value = 0;        ///< NaN and ±inf round-trip
  double wall_time = 0;    ///< seconds since the Unix epoch (RunStore::now_seconds())
};

/// One metric of one evaluation.
struct EvalPoint {
  double epoch = 0;
  std::int64_t step = 0;
  std::string metric;      ///< e.g. "P@5", "nDCG@3", "PSP@1" (fractions, not percent)
  double value = 0;
};

/// Decile-wise metric of one evaluation: bins[0] = head labels ... bins[9] = tail labels.
struct DecileTable {
  double epoch = 0;
  std::string metric;      ///< e.g. "P@5"
  std::vector<double> bins;  ///< exactly 10 values
};

/// A label added to a trained run by its text; its label id is the run's label count plus its position
/// among the run's added labels.
/// One grid point of a sweep: its config assignments ("lr=0.003") and the run that trains it (0 = none yet).
struct SweepPoint {
  std::int64_t position = 0;             ///< 0-based, in grid order (the last axis varies fastest)
  std::vector<std::string> assignments;  ///< applied to the sweep's base config, in order
  std::int64_t run = 0;
};

/// A sweep: a base config and a grid of values, each point trained as a normal run.
struct SweepInfo {
  std::int64_t id = 0;
  std::string name;
  std::string created;
  std::string config_json;  ///< the base config
  std::string grid_json;    ///< [{"key": "lr", "values": ["0.001", "0.003"]}, ...]
  std::vector<SweepPoint> points;
};

struct AddedLabel {
  std::int64_t id = 0;         ///< the store's row id (stable, used to remove it)
  std::string text;
  std::string synthesized_by;  ///< how its vectors were made: "embedding", "irene run 7", ...
  std::string created;
};

/// One line of a run's log: a phase it entered or a decision it made ("UniDEC: concat weight 0.8 ...").
struct LogLine {
  double wall_time = 0;   ///< seconds since the epoch
  std::int64_t step = 0;  ///< optimiser steps made before it
  std::string message;
};

/// A file the run produced.
struct Artifact {
  std::string kind;        ///< e.g. "checkpoint", "index", "report"
  std::string path;
  std::string created;     ///< ISO-8601 UTC
};

/// A t-SNE view saved during training; the payload format belongs to its writer.
struct TsneSnapshot {
  double epoch = 0;
  std::int64_t query = 0;  ///< query the snapshot is centred on (-1 when none)
  std::string payload_json;
};

}  // namespace xmc
