#pragma once
// Where a run's files live (checkpoint, vocabulary): next to its store, in a folder of the store's own,
// `<folder of db>/<db file name>.artifacts/<run id>` (runs.sqlite -> runs.sqlite.artifacts/1), so that
// two stores in one folder never share files.
#include <cstdint>
#include <filesystem>

namespace xmc {

/// The folder of run `run_id`'s files. Stores written by earlier versions kept them in
/// `<folder of db>/runs/<run_id>`; that folder is returned only when the run's own checkpoint record in
/// the store points into it (a folder shared by several stores is never taken for another store's).
std::filesystem::path run_directory(const std::filesystem::path& db_path, std::int64_t run_id);

/// The file in a run's folder that names the store and run owning it ({"store": "<store id>", "run": N}).
inline std::filesystem::path identity_file(const std::filesystem::path& run_dir) { return run_dir / "run-identity.json"; }

/// The folder of a new run (or of one that trains again from the start): a folder left at that place by
/// another store or run (ids restart when a store file is recreated) is moved aside to
/// `<id>.stale-<unix time>` — never used, never deleted — and a fresh folder marked with the run's
/// identity takes its place.
std::filesystem::path fresh_run_directory(const std::filesystem::path& db_path, std::int64_t run_id);

/// run_directory(), checked to belong to this run of this store before any file in it is used. A folder
/// of an earlier version without an identity file is adopted (and marked) only when it is empty or when
/// the store records the run's checkpoint in it. Throws xmc::InputError naming the folder and its owner.
std::filesystem::path verified_run_directory(const std::filesystem::path& db_path, std::int64_t run_id);

/// The checkpoint a run resumes from and is predicted with, in its folder `run_dir`.
inline std::filesystem::path checkpoint_file(const std::filesystem::path& run_dir) { return run_dir / "checkpoint.pt"; }
/// Where an evaluation sets the training state it does not read aside while it runs (train/set_aside_tensors.h).
inline std::filesystem::path evaluation_set_aside_file(const std::filesystem::path& run_dir) { return run_dir / "evaluation-set-aside.bin"; }

/// Deletes run `run_id` from the store and then its files folder (only the store's own folder).
/// Throws what RunStore::delete_run throws; a folder that cannot be removed is reported as an Error
/// naming it, after the run is gone from the store.
void delete_run_and_files(const std::filesystem::path& db_path, std::int64_t run_id);

}  // namespace xmc
