#include "widgets/runs/run_table_model.h"

#include "engine/session/run_filter_values.h"

#include "engine/records/evaluation_modes.h"
#include "engine/session/run_config_view.h"

#include <sys/stat.h>

#include <QColor>
#include <QDateTime>
#include <QFileInfo>
#include <QIcon>
#include <QPainter>
#include <QPixmap>
#include <QTimer>
#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>


namespace xmc::gui {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString qstr(const std::string& s) { return QString::fromStdString(s); }

QColor status_colour(RunStatus status) {
  switch (status) {
    case RunStatus::Created: return QColor(0x80, 0x80, 0x80);
    case RunStatus::Running: return QColor(0x1f, 0x6f, 0xc4);
    case RunStatus::Paused: return QColor(0xd9, 0x7a, 0x00);
    case RunStatus::Completed: return QColor(0x2a, 0x8c, 0x2a);
    case RunStatus::Failed: return QColor(0xc6, 0x28, 0x28);
    case RunStatus::Stopped: return QColor(0x6d, 0x5a, 0x4f);
  }
  return QColor(Qt::gray);
}

/// A filled dot in the status colour (a ring for states that are not final yet).
QIcon make_status_icon(RunStatus status) {
  QPixmap pixmap(16, 16);
  pixmap.fill(Qt::transparent);
  QPainter p(&pixmap);
  p.setRenderHint(QPainter::Antialiasing);
  const QColor c = status_colour(status);
  const bool pending = status == RunStatus::Created || status == RunStatus::Paused;
  p.setPen(QPen(c, 2));
  p.setBrush(pending ? QBrush(Qt::NoBrush) : QBrush(c));
  p.drawEllipse(QRectF(3, 3, 10, 10));
  p.end();
  return QIcon(pixmap);
}

/// Runs whose evaluations may still grow: re-read them on every poll.
bool is_active(RunStatus status) { return status == RunStatus::Running || status == RunStatus::Created; }

/// "2025-01-31T12:00:00.123Z" as local time "2025-01-31 13:00:00"; the text itself when unparsable.
QString local_time(const std::string& iso) {
  const QDateTime t = QDateTime::fromString(qstr(iso), Qt::ISODateWithMs);
  return t.isValid() ? t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")) : qstr(iso);
}

/// A run's tags as the Tags column shows and edits them: "baseline, sweep-3".
QString tags_text(const RunInfo& info) {
  QStringList tags;
  for (const auto& t : info.tags) tags << QString::fromStdString(t);
  return tags.join(QStringLiteral(", "));
}

QString first_line(const std::string& text) {
  const QString s = qstr(text);
  const qsizetype nl = s.indexOf(QLatin1Char('\n'));
  return nl < 0 ? s : s.left(nl) + QStringLiteral(" …");
}

QString percent(double fraction) { return QString::number(fraction * 100.0, 'f', 2); }

/// The dataset folder's name ("wordnet-20k"), or its path when it has none.
QString dataset_name(const RunInfo& info) {
  const QString path = qstr(info.dataset_path);
  const QString name = QFileInfo(path.endsWith(QLatin1Char('/')) ? path.chopped(1) : path).fileName();
  return name.isEmpty() ? path : name;
}

/// The run's config value at `key`, dotted through nested objects ("encoder.dim") or stored dotted; "—"
/// when the config has no such key.
QString config_value(const RunInfo& info, const QString& key_text) {
  const auto config = flat_run_config(info.config_json);
  const auto it = config->find(key_text.toStdString());
  return it == config->end() ? QStringLiteral("—") : QString::fromStdString(it->second);
}

/// A short, stable name of a config flattened without its seed (RunTableModel::flat_config): runs that differ
/// only in the seed share it.
QString config_hash(const std::map<std::string, std::string>& flat) {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the sorted keys and values: the same name in every session
  auto mix = [&hash](const std::string& text) {
    for (const unsigned char ch : text) hash = (hash ^ ch) * 1099511628211ULL;
    hash = (hash ^ 0xffu) * 1099511628211ULL;  // a separator no UTF-8 text holds
  };
  for (const auto& [key, value] : flat) mix(key), mix(value);
  return QStringLiteral("config %1").arg(hash & 0xffffffULL, 6, 16, QLatin1Char('0'));
}

/// Seconds from a run's creation to its last change of status, or to now while it is active; NaN when a
/// time cannot be read.
double duration_seconds(const RunInfo& info) {
  const QDateTime created = QDateTime::fromString(qstr(info.created), Qt::ISODateWithMs);
  const bool active = info.status == RunStatus::Running || info.status == RunStatus::Paused || info.status == RunStatus::Created;
  const QDateTime end = active ? QDateTime::currentDateTimeUtc() : QDateTime::fromString(qstr(info.updated), Qt::ISODateWithMs);
  if (!created.isValid() || !end.isValid()) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(created.msecsTo(end)) / 1000.0;
}

/// "45 s", "12 min 05 s", "3 h 04 min".
QString duration_text(double seconds) {
  const auto s = static_cast<qint64>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return QStringLiteral("%1 s").arg(s);
  if (s < 3600) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString epoch_text(double epoch) { return QString::number(epoch, 'g', 4); }

}  // namespace

bool RunTableModel::Row::operator==(const Row& other) const {
  const auto same_number = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  if (metrics.size() != other.metrics.size() || mode != other.mode || last_points.size() != other.last_points.size()) return false;
  for (std::size_t i = 0; i < last_points.size(); ++i)
    if (last_points[i].metric != other.last_points[i].metric || last_points[i].step != other.last_points[i].step ||
        !same_number(last_points[i].value, other.last_points[i].value))
      return false;
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const MetricSummary& a = metrics[i];
    const MetricSummary& b = other.metrics[i];
    if (!same_number(a.final_value, b.final_value) || !same_number(a.final_epoch, b.final_epoch) ||
        !same_number(a.best_value, b.best_value) || !same_number(a.best_epoch, b.best_epoch))
      return false;
  }
  // Only what the table shows: heartbeats alone do not repaint rows.
  return info.id == other.info.id && info.name == other.info.name && info.status == other.info.status &&
         info.created == other.info.created && info.dataset_path == other.info.dataset_path &&
         info.device == other.info.device && info.last_error == other.info.last_error &&
         info.host == other.info.host && info.updated == other.info.updated;
}

RunTableModel::RunTableModel(std::filesystem::path db, QObject* parent)
    : QAbstractTableModel(parent), db_(std::move(db)) {
  timer_ = new QTimer(this);
  connect(timer_, &QTimer::timeout, this, [this] { reload(false); });
  refresh();
}

RunTableModel::~RunTableModel() = default;

bool RunTableModel::open_store() {
  try {
    store_ = std::make_unique<Session>(db_);
    store_->open();
    struct stat info {};
    if (::stat(db_.c_str(), &info) == 0) {
      opened_device_ = static_cast<std::uint64_t>(info.st_dev);
      opened_inode_ = static_cast<std::uint64_t>(info.st_ino);
    }
    return true;
  } catch (const std::exception& e) {
    fail(QString::fromUtf8(e.what()));
    return false;
  }
}

bool RunTableModel::store_replaced() const {
  struct stat info {};
  if (::stat(db_.c_str(), &info) != 0) return false;  // gone: keep showing what was read, and say so on the next read
  return static_cast<std::uint64_t>(info.st_dev) != opened_device_ || static_cast<std::uint64_t>(info.st_ino) != opened_inode_;
}

void RunTableModel::fail(const QString& message) {
  last_error_ = message;
  Q_EMIT error_occurred(message);
}

bool RunTableModel::refresh() { return reload(true); }

void RunTableModel::set_follow(bool on, int interval_ms) {
  if (!on) {
    timer_->stop();
    return;
  }
  timer_->start(std::max(50, interval_ms));
}

bool RunTableModel::following() const { return timer_->isActive(); }

void RunTableModel::set_metric_value(MetricValue which) {
  if (which == metric_value_) return;
  metric_value_ = which;
  if (!rows_.empty()) Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
  Q_EMIT headerDataChanged(Qt::Horizontal, 0, columnCount() - 1);
}

bool RunTableModel::reload(bool all_evaluations) {
  if (store_ && store_replaced()) {  // a new file at the same path: read it, not the old one, nor what was kept of it
    store_.reset();
    ended_chosen_settings_.clear();
    ended_system_use_.clear();
    flat_configs_.clear();
    method_cache_.clear();
  }
  if (!store_ && !open_store()) return false;
  try {
    load_rows(all_evaluations);
  } catch (const std::exception&) {
    // A connection whose -wal/-shm files were deleted under it reads "disk I/O error" or "not a database"
    // although the file is fine: open it afresh once before reporting.
    store_.reset();
    try {
      if (!open_store()) return false;
      load_rows(all_evaluations);
    } catch (const std::exception& e) {
      fail(QString::fromUtf8(e.what()));
      return false;
    }
  }
  last_error_.clear();
  Q_EMIT refreshed();
  return true;
}

void RunTableModel::load_rows(bool all_evaluations) {
  {
    // A read-only store still lists its runs: reaping is best effort.
    try {
      store_->reap_orphaned_runs();
    } catch (const std::exception&) {
    }
    std::vector<RunInfo> infos = store_->list_runs();
    std::unordered_map<std::int64_t, std::size_t> previous;
    for (std::size_t r = 0; r < rows_.size(); ++r) previous.emplace(rows_[r].info.id, r);
    std::vector<Row> fresh;
    fresh.reserve(infos.size());
    for (RunInfo& info : infos) {
      auto it = previous.find(info.id);
      fresh.push_back(make_row(std::move(info), it == previous.end() ? nullptr : &rows_[it->second], all_evaluations));
    }
    if (group_key_ == QLatin1String(kSeedGroup)) update_varying_keys(fresh);
    apply(std::move(fresh));
  }
}

RunTableModel::Row RunTableModel::make_row(RunInfo info, const Row* previous, bool read_evaluations) const {
  Row row;
  const bool reuse = !read_evaluations && previous != nullptr && !is_active(info.status) && previous->metrics.size() == metric_keys_.size() &&
                     previous->info.updated == info.updated && previous->info.status == info.status;
  if (reuse) {
    row.metrics = previous->metrics;
    row.mode = previous->mode;
    row.last_points = previous->last_points;
  } else {
    row.metrics.assign(metric_keys_.size(), MetricSummary{kNaN, kNaN, kNaN, kNaN});
    const std::vector<EvalPoint> points = store_->evaluations(info.id);
    row.mode = final_primary_mode(points);
    for (const EvalPoint& p : points) {
      const auto last = std::find_if(row.last_points.begin(), row.last_points.end(), [&](const EvalPoint& seen) { return seen.metric == p.metric; });
      if (last == row.last_points.end()) row.last_points.push_back(p);
      else *last = p;  // evaluations come by step
      metrics_seen_.insert(p.metric);
      for (std::size_t m = 0; m < metric_keys_.size(); ++m) {
        if (p.metric != metric_keys_[m]) continue;
        MetricSummary& s = row.metrics[m];
        s.final_value = p.value;  // evaluations come by step: the last one is the final one
        s.final_epoch = p.epoch;
        if (!std::isnan(p.value) && (std::isnan(s.best_value) || p.value > s.best_value)) {
          s.best_value = p.value;
          s.best_epoch = p.epoch;
        }
      }
    }
  }
  row.info = std::move(info);
  return row;
}

void RunTableModel::apply(std::vector<Row> fresh) {
  // 1. Remove rows of runs that are gone, in contiguous blocks from the bottom.
  std::unordered_set<std::int64_t> fresh_ids;
  for (const Row& r : fresh) fresh_ids.insert(r.info.id);
  for (int r = static_cast<int>(rows_.size()) - 1; r >= 0; --r) {
    if (fresh_ids.count(rows_[static_cast<std::size_t>(r)].info.id)) continue;
    const int last = r;
    while (r > 0 && !fresh_ids.count(rows_[static_cast<std::size_t>(r - 1)].info.id)) --r;
    beginRemoveRows({}, r, last);
    rows_.erase(rows_.begin() + r, rows_.begin() + last + 1);
    endRemoveRows();
  }

  // 2. The remaining rows must appear in the same order in the fresh list (ids only grow, the list
  //    is newest first); anything else is a store we do not understand: reset.
  std::unordered_set<std::int64_t> kept;
  for (const Row& r : rows_) kept.insert(r.info.id);
  {
    std::size_t i = 0;
    bool same_order = true;
    for (const Row& r : fresh) {
      if (!kept.count(r.info.id)) continue;
      if (i >= rows_.size() || rows_[i].info.id != r.info.id) {
        same_order = false;
        break;
      }
      ++i;
    }
    if (!same_order) {
      beginResetModel();
      rows_ = std::move(fresh);
      endResetModel();
      return;
    }
  }

  // 3. Merge: update kept rows in place, insert new runs in blocks.
  std::size_t i = 0;
  std::size_t j = 0;
  while (j < fresh.size()) {
    if (i < rows_.size() && rows_[i].info.id == fresh[j].info.id) {
      if (rows_[i] == fresh[j]) {
        rows_[i].info = std::move(fresh[j].info);  // heartbeat etc.: not shown, no repaint
      } else {
        rows_[i] = std::move(fresh[j]);
        const int r = static_cast<int>(i);
        Q_EMIT dataChanged(index(r, 0), index(r, columnCount() - 1));
      }
      ++i;
      ++j;
      continue;
    }
    std::size_t k = j;
    while (k < fresh.size() && !kept.count(fresh[k].info.id)) ++k;
    const int first = static_cast<int>(i);
    const int count = static_cast<int>(k - j);
    beginInsertRows({}, first, first + count - 1);
    rows_.insert(rows_.begin() + first, std::make_move_iterator(fresh.begin() + static_cast<std::ptrdiff_t>(j)),
                 std::make_move_iterator(fresh.begin() + static_cast<std::ptrdiff_t>(k)));
    endInsertRows();
    i += k - j;
    j = k;
  }
}

int RunTableModel::row_of(std::int64_t run) const {
  for (std::size_t r = 0; r < rows_.size(); ++r)
    if (rows_[r].info.id == run) return static_cast<int>(r);
  return -1;
}

std::int64_t RunTableModel::run_id(const QModelIndex& index) const {
  if (!index.isValid() || index.model() != this || index.row() < 0 || index.row() >= rowCount()) return -1;
  return rows_[static_cast<std::size_t>(index.row())].info.id;
}

QModelIndex RunTableModel::index_of_run(std::int64_t run, int column) const {
  const int r = row_of(run);
  return r < 0 ? QModelIndex() : index(r, column);
}

bool RunTableModel::passes(std::int64_t run, const RunFilter& filter) const {
  const int r = row_of(run);
  if (r < 0) return false;
  const Row& row = rows_[static_cast<std::size_t>(r)];
  return run_passes(filter, row.info, row.last_points);
}

const RunInfo* RunTableModel::run_info(std::int64_t run) const {
  const int r = row_of(run);
  return r < 0 ? nullptr : &rows_[static_cast<std::size_t>(r)].info;
}

bool RunTableModel::rename_run(std::int64_t run, const QString& name, QString* error) {
  const QString trimmed = name.trimmed();
  const auto failed = [&](const QString& message) {
    if (error) *error = message;
    fail(message);
    return false;
  };
  if (trimmed.isEmpty()) return failed(tr("A run name cannot be empty."));
  if (!store_ && !open_store()) return failed(last_error_);
  try {
    store_->rename_run(run, trimmed.toStdString());
  } catch (const std::exception& e) {
    return failed(QString::fromUtf8(e.what()));
  }
  const int r = row_of(run);
  if (r >= 0) {
    Row& row = rows_[static_cast<std::size_t>(r)];
    if (auto info = store_->find_run(run)) row.info = std::move(*info);
    else row.info.name = trimmed.toStdString();
    Q_EMIT dataChanged(index(r, 0), index(r, columnCount() - 1));
  }
  return true;
}

void RunTableModel::set_group_key(const QString& key) {
  group_key_ = key.trimmed();
  if (group_key_ == QLatin1String(kSeedGroup)) update_varying_keys(rows_);  // kept current by every reload while grouped
  Q_EMIT headerDataChanged(Qt::Horizontal, kGroup, kGroup);
  if (!rows_.empty()) Q_EMIT dataChanged(index(0, kGroup), index(rowCount() - 1, kGroup));
}

QString RunTableModel::group_of(const RunInfo& info) const {
  if (group_key_.isEmpty()) return {};
  if (group_key_ == QLatin1String("method")) return method_of(info);
  if (group_key_ == QLatin1String("dataset")) return dataset_name(info);
  if (group_key_ == QLatin1String("tag")) return info.tags.empty() ? QStringLiteral("—") : tags_text(info);
  if (group_key_ == QLatin1String(kSeedGroup)) {
    // Runs that differ only in their seed share this name: what they are (method, dataset), and the values that set
    // their config apart from the other runs of that method on that dataset, the key with the most values first (a
    // hash of the config after three).
    QStringList parts;
    for (const QString& part : {method_of(info), dataset_name(info)})
      if (!part.isEmpty()) parts.append(part);
    const auto& config = flat_config(info);
    QStringList values;
    const auto family = varying_keys_.find(family_of(info));
    for (const std::string& key : family == varying_keys_.end() ? std::vector<std::string>{} : family->second) {
      const auto it = config.find(key);
      values.append(qstr(key) + QLatin1Char('=') + (it == config.end() ? QStringLiteral("—") : qstr(it->second)));
    }
    constexpr int kMostValuesNamed = 3;
    if (values.size() > kMostValuesNamed) values = values.mid(0, kMostValuesNamed) << QStringLiteral("… ") + config_hash(config);
    if (!values.isEmpty()) parts.append(values.join(QStringLiteral(", ")));
    return parts.join(QStringLiteral(" · "));
  }
  return config_value(info, group_key_);
}

QString RunTableModel::family_of(const RunInfo& info) const { return method_of(info) + QChar(0x1f) + dataset_name(info); }

void RunTableModel::update_varying_keys(const std::vector<Row>& rows) {
  // Within a family, a key varies when two runs hold different values for it, or some run lacks it.
  struct Seen {
    std::set<std::string> values;
    std::size_t holders = 0;
  };
  std::map<QString, std::pair<std::size_t, std::map<std::string, Seen>>> families;  // family -> (runs, key -> seen)
  for (const Row& row : rows) {
    auto& [runs, keys] = families[family_of(row.info)];
    ++runs;
    for (const auto& [key, value] : flat_config(row.info)) {
      if (key == "method" || key == "dataset") continue;  // named by the family already
      Seen& seen = keys[key];
      seen.values.insert(value);
      ++seen.holders;
    }
  }
  varying_keys_.clear();
  for (const auto& [family, entry] : families) {
    const auto& [runs, keys] = entry;
    std::vector<std::pair<std::size_t, std::string>> varying;  // (values, key): the keys a sweep varies take the most
    for (const auto& [key, seen] : keys)
      if (seen.values.size() > 1 || seen.holders < runs) varying.emplace_back(seen.values.size() + (seen.holders < runs ? 1 : 0), key);
    std::stable_sort(varying.begin(), varying.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    auto& named = varying_keys_[family];
    for (const auto& [count, key] : varying) named.push_back(key);
  }
}

const std::map<std::string, std::string>& RunTableModel::flat_config(const RunInfo& info) const {
  if (const auto it = flat_configs_.find(info.id); it != flat_configs_.end()) return it->second;
  std::map<std::string, std::string> flat = *flat_run_config(info.config_json);
  // What sets seeds of one setting apart, not the setting (a sweep names each).
  flat.erase("seed");
  flat.erase("name");
  return flat_configs_.emplace(info.id, std::move(flat)).first->second;
}

namespace {

/// What `read` gives for a run, kept in `cache` once the run has ended (until its status changes again: a
/// stopped run continued); read anew while it runs. Empty when the store cannot be read now (the next refresh
/// says why).
template <class Value, class Read>
Value kept_once_ended(std::unordered_map<std::int64_t, std::pair<RunStatus, Value>>& cache, const RunInfo& info, Session* store, Read&& read) {
  if (const auto it = cache.find(info.id); it != cache.end() && it->second.first == info.status) return it->second.second;
  if (!store) return {};
  Value value;
  try {
    value = read(*store);
  } catch (const std::exception&) {
    return {};
  }
  if (info.status == RunStatus::Completed || info.status == RunStatus::Failed || info.status == RunStatus::Stopped) cache[info.id] = {info.status, value};
  return value;
}

}  // namespace

std::vector<ChosenSetting> RunTableModel::chosen_settings_of(const RunInfo& info) const {
  return kept_once_ended(ended_chosen_settings_, info, store_.get(), [&](Session& s) { return s.chosen_settings(info.id); });
}

SystemUse RunTableModel::system_use_of(const RunInfo& info) const {
  return kept_once_ended(ended_system_use_, info, store_.get(), [&](Session& s) { return s.system_use(info.id); });
}

QString RunTableModel::method_of(const RunInfo& info) const {
  // A run's config never changes: parsed once per run, not at every paint.
  if (const auto it = method_cache_.find(info.id); it != method_cache_.end()) return it->second;
  QString method;
  method = QString::fromStdString(config_value_or(*flat_run_config(info.config_json), "method"));
  return method_cache_[info.id] = method;
}

bool RunTableModel::set_tags(std::int64_t run, const QString& text, QString* error) {
  std::vector<std::string> wanted;
  for (const QString& part : text.split(QLatin1Char(','))) {
    const std::string tag = part.trimmed().toStdString();
    if (!tag.empty() && std::find(wanted.begin(), wanted.end(), tag) == wanted.end()) wanted.push_back(tag);
  }
  return update_run(run, error, [&](Session& session, const RunInfo& before) {
    std::vector<std::string> gone;
    for (const auto& tag : before.tags)
      if (std::find(wanted.begin(), wanted.end(), tag) == wanted.end()) gone.push_back(tag);
    session.add_run_tags(run, wanted);  // checks every tag first: a bad one changes nothing
    session.remove_run_tags(run, gone);
  });
}

bool RunTableModel::set_notes(std::int64_t run, const QString& notes, QString* error) {
  return update_run(run, error, [&](Session& session, const RunInfo&) { session.set_run_notes(run, notes.toStdString()); });
}

bool RunTableModel::update_run(std::int64_t run, QString* error, const std::function<void(Session&, const RunInfo&)>& change) {
  const auto failed = [&](const QString& message) {
    if (error) *error = message;
    fail(message);
    return false;
  };
  if (!store_ && !open_store()) return failed(last_error_);
  try {
    change(*store_, store_->get_run(run));
  } catch (const std::exception& e) {
    return failed(QString::fromUtf8(e.what()));
  }
  const int r = row_of(run);
  if (r >= 0) {
    if (auto info = store_->find_run(run)) rows_[static_cast<std::size_t>(r)].info = std::move(*info);
    Q_EMIT dataChanged(index(r, 0), index(r, columnCount() - 1));
  }
  return true;
}

bool RunTableModel::delete_run(std::int64_t run, QString* error) {
  if (!store_ && !open_store()) {
    if (error) *error = last_error_;
    return false;
  }
  try {
    store_->delete_run(run);
  } catch (const std::exception& e) {
    const QString message = QString::fromUtf8(e.what());
    if (error) *error = message;
    fail(message);
    return false;
  }
  const int r = row_of(run);
  if (r >= 0) {
    beginRemoveRows({}, r, r);
    rows_.erase(rows_.begin() + r);
    endRemoveRows();
  }
  return true;
}

QVariant RunTableModel::metric_cell(const Row& row, std::size_t slot, int role) const {
  if (slot >= row.metrics.size() || slot >= metric_keys_.size()) return {};  // a column added before the rows were re-read
  const MetricSummary& m = row.metrics[slot];
  const QString name = qstr(metric_keys_[slot]);
  const bool best = metric_value_ == MetricValue::Best;
  const double value = best ? m.best_value : m.final_value;
  switch (role) {
    case Qt::DisplayRole: return std::isnan(value) ? QString() : percent(value);
    case kSortRole: return std::isnan(value) ? -1.0 : value;
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole:
      if (std::isnan(m.final_value)) return tr("%1: not evaluated yet").arg(name);
      return tr("%1: final %2 % (epoch %3), best %4 % (epoch %5)")
          .arg(name, percent(m.final_value), epoch_text(m.final_epoch), percent(m.best_value), epoch_text(m.best_epoch));
    default: return {};
  }
}

QVariant RunTableModel::extra_cell(const Row& row, const ExtraColumn& column, int role) const {
  switch (column.kind) {
    case ExtraColumn::Kind::metric: {
      const auto it = std::find(metric_keys_.begin(), metric_keys_.end(), column.key.toStdString());
      return metric_cell(row, static_cast<std::size_t>(it - metric_keys_.begin()), role);
    }
    case ExtraColumn::Kind::config: {
      if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != kSortRole) return {};
      const QString value = config_value(row.info, column.key);
      const std::string key = column.key.toStdString();
      for (const ChosenSetting& chosen : chosen_settings_of(row.info)) {
        if (chosen.key != key) continue;  // the value the run used, not the one it was given
        if (role == Qt::DisplayRole || role == Qt::ToolTipRole)
          return QString::fromStdString(chosen_value_text(chosen, value == QStringLiteral("—") ? std::string() : value.toStdString()));
        if (role == kSortRole) return chosen.value;
        return {};
      }
      if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return value;
      if (role == kSortRole) {  // numbers as numbers
        bool ok = false;
        const double number = value.toDouble(&ok);
        return ok ? QVariant(number) : QVariant(value);
      }
      return {};
    }
    case ExtraColumn::Kind::system: {
      if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != kSortRole) return {};
      const SystemUse use = system_use_of(row.info);
      const std::optional<double> value = column.key == QLatin1String(kPeakMemory) ? use.peak_memory_gb : use.mean_cpu_cores;
      // printf's rounding, as the tooltip's and the report's text (system_use_text).
      if (role == Qt::DisplayRole) return value ? QString::asprintf(column.key == QLatin1String(kPeakMemory) ? "%.2f" : "%.1f", *value) : QString();
      if (role == Qt::ToolTipRole && value) return QString::fromStdString(system_use_text(use));
      if (role == kSortRole) return value ? *value : -1.0;
      return {};
    }
    case ExtraColumn::Kind::duration: {
      const double seconds = duration_seconds(row.info);
      if (role == Qt::DisplayRole) return std::isnan(seconds) ? QString() : duration_text(seconds);
      if (role == kSortRole) return std::isnan(seconds) ? -1.0 : seconds;
      if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    }
  }
  return {};
}

bool RunTableModel::add_column(const ExtraColumn& column) {
  if (std::find(extra_.begin(), extra_.end(), column) != extra_.end()) return false;
  if (column.kind != ExtraColumn::Kind::duration && column.key.trimmed().isEmpty()) return false;
  if (column.kind == ExtraColumn::Kind::system && column.key != QLatin1String(kPeakMemory) && column.key != QLatin1String(kMeanCpu)) return false;
  const int section = columnCount();
  beginInsertColumns({}, section, section);
  extra_.push_back(column);
  const bool new_metric = column.kind == ExtraColumn::Kind::metric &&
                          std::find(metric_keys_.begin(), metric_keys_.end(), column.key.toStdString()) == metric_keys_.end();
  if (new_metric) metric_keys_.push_back(column.key.toStdString());
  endInsertColumns();
  if (new_metric) reload(true);  // every run's values of the new metric
  return true;
}

bool RunTableModel::remove_column(int section) {
  if (section < kColumnCount || section >= columnCount()) return false;
  beginRemoveColumns({}, section, section);
  extra_.erase(extra_.begin() + (section - kColumnCount));
  endRemoveColumns();
  return true;  // its metric stays read (a slot in Row::metrics): cheap, and re-adding it is instant
}

QString RunTableModel::metric_of_section(int section) const {
  if (section >= kP1 && section <= kPsp5) return qstr(metric_keys_[static_cast<std::size_t>(section - kP1)]);
  if (section >= kColumnCount && section < columnCount()) {
    const ExtraColumn& extra = extra_[static_cast<std::size_t>(section - kColumnCount)];
    if (extra.kind == ExtraColumn::Kind::metric) return extra.key;
  }
  return {};
}

double RunTableModel::metric_value_of(std::int64_t run, const QString& metric) const {
  const int r = row_of(run);
  const auto it = std::find(metric_keys_.begin(), metric_keys_.end(), metric.toStdString());
  if (r < 0 || it == metric_keys_.end()) return kNaN;
  const Row& row = rows_[static_cast<std::size_t>(r)];
  const auto slot = static_cast<std::size_t>(it - metric_keys_.begin());
  if (slot >= row.metrics.size()) return kNaN;
  return metric_value_ == MetricValue::Best ? row.metrics[slot].best_value : row.metrics[slot].final_value;
}

int RunTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RunTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount + static_cast<int>(extra_.size()); }

QVariant RunTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() < 0 || index.row() >= rowCount()) return {};
  const Row& row = rows_[static_cast<std::size_t>(index.row())];
  const RunInfo& info = row.info;
  const int column = index.column();
  if (role == kRunIdRole) return QVariant::fromValue<qint64>(info.id);
  if (role == kFilterRole)
    return qstr(info.name) + QLatin1Char('\n') + qstr(info.dataset_path) + QLatin1Char('\n') + qstr(to_string(info.status)) +
           QLatin1Char('\n') + method_of(info) + QLatin1Char('\n') + tags_text(info) + QLatin1Char('\n') + qstr(info.notes);

  if (column >= kP1 && column <= kPsp5) return metric_cell(row, static_cast<std::size_t>(column - kP1), role);
  if (column >= kColumnCount && column < columnCount()) return extra_cell(row, extra_[static_cast<std::size_t>(column - kColumnCount)], role);

  switch (column) {
    case kId:
      if (role == Qt::DisplayRole || role == kSortRole) return QVariant::fromValue<qint64>(info.id);
      if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case kName:
      if (role == Qt::DisplayRole || role == Qt::EditRole || role == kSortRole) return qstr(info.name);
      if (role == Qt::ToolTipRole) return qstr(info.name);
      break;
    case kStatus:
      if (role == Qt::DisplayRole || role == kSortRole) return qstr(to_string(info.status));
      if (role == Qt::DecorationRole) {
        QIcon& icon = status_icons_[static_cast<std::size_t>(info.status)];
        if (icon.isNull()) icon = make_status_icon(info.status);  // made on first use: needs a QGuiApplication
        return icon;
      }
      if (role == Qt::ForegroundRole) return status_colour(info.status);
      if (role == Qt::ToolTipRole) {
        QString tip = tr("%1 since %2").arg(qstr(to_string(info.status)), local_time(info.updated));
        if (!info.host.empty()) tip += tr("\nowner: %1 (pid %2)").arg(qstr(info.host)).arg(info.pid);
        if (!info.heartbeat.empty()) tip += tr("\nlast heartbeat: %1").arg(local_time(info.heartbeat));
        return tip;
      }
      break;
    case kCreated:
      if (role == Qt::DisplayRole) return local_time(info.created);
      if (role == kSortRole || role == Qt::ToolTipRole) return qstr(info.created);
      break;
    case kDataset: {
      const QString path = qstr(info.dataset_path);
      if (role == Qt::DisplayRole || role == kSortRole) {
        const QString name = QFileInfo(path.endsWith(QLatin1Char('/')) ? path.chopped(1) : path).fileName();
        return name.isEmpty() ? path : name;
      }
      if (role == Qt::ToolTipRole) return path;
      break;
    }
    case kDevice:
      if (role == Qt::DisplayRole || role == kSortRole) return qstr(info.device);
      if (role == Qt::ToolTipRole && !info.host.empty()) return tr("%1 on %2").arg(qstr(info.device), qstr(info.host));
      break;
    case kMethod:
      if (role == Qt::DisplayRole || role == kSortRole || role == Qt::ToolTipRole) return method_of(info);
      break;
    case kMode:
      if (role == Qt::DisplayRole || role == kSortRole) return qstr(row.mode);
      if (role == Qt::ToolTipRole)
        return row.mode.empty() ? tr("No named inference mode (not evaluated yet, or stored before modes were named)")
                                : tr("The metric columns are the %1 mode's: the run's primary mode at its last evaluation").arg(qstr(row.mode));
      break;
    case kTags:
      if (role == Qt::DisplayRole || role == Qt::EditRole || role == kSortRole) return tags_text(info);
      if (role == Qt::ToolTipRole) return tr("Tags, separated by commas (double-click or F2 on this cell to edit)");
      break;
    case kNotes:
      if (role == Qt::DisplayRole) return first_line(info.notes);
      if (role == Qt::EditRole || role == kSortRole) return qstr(info.notes);
      if (role == Qt::ToolTipRole) return info.notes.empty() ? tr("Notes (double-click to write)") : qstr(info.notes);
      break;
    case kGroup:
      if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return group_of(info);
      // Sorting by the group keeps its runs together, newest first inside it.
      if (role == kSortRole) return group_of(info) + QLatin1Char('\t') + QStringLiteral("%1").arg(std::numeric_limits<qint64>::max() - info.id, 19, 10, QLatin1Char('0'));
      break;
    case kLastError:
      if (role == Qt::DisplayRole) return first_line(info.last_error);
      if (role == kSortRole || role == Qt::ToolTipRole) return qstr(info.last_error);
      if (role == Qt::ForegroundRole && !info.last_error.empty()) return status_colour(RunStatus::Failed);
      break;
    default: break;
  }
  return {};
}

QVariant RunTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return QAbstractTableModel::headerData(section, orientation, role);
  const bool best = metric_value_ == MetricValue::Best;
  if (section >= kColumnCount && section < columnCount()) {
    const ExtraColumn& extra = extra_[static_cast<std::size_t>(section - kColumnCount)];
    if (role == Qt::DisplayRole) {
      switch (extra.kind) {
        case ExtraColumn::Kind::metric: return tr("%1 (%)").arg(extra.key);
        case ExtraColumn::Kind::config: return extra.key;
        case ExtraColumn::Kind::duration: return tr("Duration");
        case ExtraColumn::Kind::system: return extra.key == QLatin1String(kPeakMemory) ? tr("Peak memory (GB)") : tr("CPU cores (mean)");
      }
    }
    if (role == Qt::ToolTipRole) {
      switch (extra.kind) {
        case ExtraColumn::Kind::metric: return best ? tr("Best value over all evaluations, in % — the epoch picked on the test split: optimistic") : tr("Value at the last evaluation, in %");
        case ExtraColumn::Kind::config: return tr("The run's config value of %1").arg(extra.key);
        case ExtraColumn::Kind::duration: return tr("From creation to the last change of status (to now while running)");
        case ExtraColumn::Kind::system:
          return extra.key == QLatin1String(kPeakMemory) ? tr("The training process's largest resident memory, in GiB (the workbench's own when it trained the run)")
                                                         : tr("CPU seconds per wall second of the training process, sampled every 10 s: 2.0 = two cores busy throughout");
      }
    }
    return {};
  }
  if (role == Qt::DisplayRole) {
    switch (section) {
      case kId: return tr("ID");
      case kName: return tr("Name");
      case kStatus: return tr("Status");
      case kCreated: return tr("Created");
      case kMethod: return tr("Method");
      case kDataset: return tr("Dataset");
      case kDevice: return tr("Device");
      case kMode: return tr("Mode");
      case kP1: return tr("P@1 (%)");
      case kP5: return tr("P@5 (%)");
      case kPsp5: return tr("PSP@5 (%)");
      case kTags: return tr("Tags");
      case kNotes: return tr("Notes");
      case kLastError: return tr("Last error");
      case kGroup: return group_key_.isEmpty() ? tr("Group") : tr("Group: %1").arg(group_key_);
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole && section >= kP1 && section <= kPsp5) {
    return best ? tr("Best value over all evaluations of the run, in % — the epoch picked on the test split: optimistic")
                : tr("Value at the run's last evaluation, in %");
  }
  return {};
}

Qt::ItemFlags RunTableModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.isValid() && (index.column() == kName || index.column() == kTags || index.column() == kNotes)) f |= Qt::ItemIsEditable;
  return f;
}

bool RunTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole) return false;
  const std::int64_t run = run_id(index);
  if (run < 0) return false;
  if (index.column() == kTags) return set_tags(run, value.toString());
  if (index.column() == kNotes) return set_notes(run, value.toString());
  if (index.column() != kName) return false;
  if (value.toString().trimmed().toStdString() == rows_[static_cast<std::size_t>(index.row())].info.name) return true;
  return rename_run(run, value.toString());
}

}  // namespace xmc::gui
