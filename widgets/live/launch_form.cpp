#include "widgets/live/launch_form.h"

#include <QComboBox>
#include <QSignalBlocker>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QThread>
#include <QScrollArea>
#include <QSplitter>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <filesystem>

#include "engine/config/component_info.h"
#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/dataset_summary.h"
#include "engine/session/devices.h"
#include "engine/session/session.h"
#include "widgets/file_dialogs.h"
#include "widgets/focus_wheel_combo_box.h"

namespace xmc::gui {
namespace {

/// Selects the item whose value (its data, else its text) is `value`; unchanged when none is.
void select_in_combo(QComboBox* combo, const QString& value) {
  const int by_data = combo->findData(value);
  if (by_data >= 0) combo->setCurrentIndex(by_data);
  else combo->setCurrentText(value);
}

QString json_to_text(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_array()) {
    QStringList parts;
    for (const auto& e : v) parts << QString::fromStdString(e.dump());
    return parts.join(", ");
  }
  return QString::fromStdString(v.dump());
}

}  // namespace

LaunchForm::LaunchForm(const QString& presets_dir, QWidget* parent) : QWidget(parent) {
  auto* outer = new QVBoxLayout(this);

  auto* top = new QFormLayout;
  auto* dataset_row = new QHBoxLayout;
  dataset_ = new QLineEdit;
  dataset_->setPlaceholderText("dataset folder (trn/tst/lbl .raw.txt, trn/tst_X_Y.txt)");
  dataset_->setToolTip("The dataset to train on: a folder in the Extreme Classification Repository raw-text layout");
  auto* browse = new QPushButton("Browse…");
  dataset_row->addWidget(dataset_, 1);
  dataset_row->addWidget(browse);
  top->addRow("Dataset", dataset_row);
  presets_ = new FocusWheelComboBox;
  presets_->setObjectName("presets");
  presets_->setToolTip("Start from an example configuration (datasets/configs); recommended-text first: what measured best for a new "
                       "text dataset on a CPU (bench/RESULTS.md)");
  top->addRow("Preset", presets_);
  outer->addLayout(top);

  auto* splitter = new QSplitter(Qt::Horizontal);
  // Left: the generated config form, in groups.
  auto* form_host = new QWidget;
  auto* form_layout = new QVBoxLayout(form_host);
  std::map<std::string, QFormLayout*> group_layouts;
  for (const auto& info : train_config_keys()) {  // one box per option group, in the key table's order
    if (group_layouts.count(info.group)) continue;
    auto* box = new QGroupBox(QString::fromStdString(info.group));
    auto* layout = new QFormLayout(box);
    layout->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    group_layouts[info.group] = layout;
    form_layout->addWidget(box);
  }
  form_layout->addStretch();
  const auto devices = device_choices();
  for (const auto& info : train_config_keys()) {
    if (info.key == "dataset") continue;  // the dataset row above
    QWidget* editor = nullptr;
    const auto default_value = nlohmann::json::parse(info.default_value);
    if (info.key.size() > 9 && info.key.ends_with(".base_run")) {
      // Another run's id: a list of the runs it can build on (set_run_choices), or any id typed.
      auto* combo = new FocusWheelComboBox;
      combo->setEditable(true);
      combo->setInsertPolicy(QComboBox::NoInsert);
      combo->setCurrentText(json_to_text(default_value));
      connect(combo, &QComboBox::currentTextChanged, this, [this] { validate(); });
      editor = combo;
    } else if (!info.choices.empty() || info.key == "device") {
      auto* combo = new FocusWheelComboBox;
      if (info.key == "device") {
        // Devices show what they are (cores and memory, a GPU's name and memory); the config takes the id.
        for (const auto& d : devices) combo->addItem(QString::fromStdString(d.description), QString::fromStdString(d.id));
      } else {
        for (const auto& c : info.choices) combo->addItem(QString::fromStdString(c));
      }
      select_in_combo(combo, json_to_text(default_value));
      connect(combo, &QComboBox::currentTextChanged, this, [this] { validate(); });  // also shows/hides keys
      editor = combo;
    } else {
      auto* line = new QLineEdit(json_to_text(default_value));
      if (info.type == "int_list") line->setPlaceholderText("e.g. 1, 3, 5");
      connect(line, &QLineEdit::textChanged, this, [this] { validate(); });
      editor = line;
    }
    const QString tip = QString::fromStdString(info.description) + "\n(" + QString::fromStdString(info.key) + ", " +
                        QString::fromStdString(info.type) + ", default " + QString::fromStdString(info.default_value) + ")";
    editor->setToolTip(tip);
    editor->setObjectName(QString::fromStdString(info.key));
    QString label_text = QString::fromStdString(info.key);
    // The budget a 0 stands for depends on the machine: say it where it is chosen.
    if (info.key == "memory_mb") label_text += QString(" (0 = %1 MB here)").arg(default_memory_budget_mb());
    auto* label = new QLabel(label_text);
    label->setToolTip(tip);
    group_layouts[info.group]->addRow(label, editor);
    fields_[info.key] = editor;
    field_groups_[info.key] = group_layouts[info.group];
  }
  auto* scroll = new QScrollArea;
  scroll->setWidget(form_host);
  scroll->setWidgetResizable(true);
  splitter->addWidget(scroll);
  // Right: dataset statistics.
  summary_ = new QPlainTextEdit;
  summary_->setReadOnly(true);
  summary_->setPlaceholderText("Choose a dataset folder to see its statistics.");
  QFont mono("monospace");
  mono.setStyleHint(QFont::Monospace);
  summary_->setFont(mono);
  splitter->addWidget(summary_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  outer->addWidget(splitter, 1);

  error_ = new QLabel;
  error_->setStyleSheet("color: #b00020;");
  error_->setWordWrap(true);
  outer->addWidget(error_);
  auto* buttons = new QHBoxLayout;
  start_ = new QPushButton("Start");
  pause_ = new QPushButton("Pause");
  resume_ = new QPushButton("Resume");
  stop_ = new QPushButton("Stop");
  sweep_ = new QPushButton("Sweep…");
  sweep_->setToolTip("Train this configuration over a grid of values (e.g. lr × temperature), each point a run of its own");
  start_->setToolTip("Record a new run in the store and train it");
  pause_->setToolTip("Hold training between steps");
  resume_->setToolTip("Continue a paused run");
  stop_->setToolTip("Stop after the current step; a checkpoint is written so the run can be resumed");
  processes_ = new QSpinBox;
  processes_->setObjectName("processes");
  processes_->setRange(1, std::max(1, QThread::idealThreadCount()));
  processes_->setPrefix("processes: ");
  processes_->setToolTip("Train with this many processes on this machine (data-parallel on Gloo): each takes a share of every "
                         "batch and of the cores, and the gradients are summed, so the run trains as one process would. "
                         "Pausing holds every process.");
  buttons->addStretch();
  buttons->addWidget(processes_);
  for (auto* b : {sweep_, start_, pause_, resume_, stop_}) buttons->addWidget(b);
  outer->addLayout(buttons);
  connect(start_, &QPushButton::clicked, this, &LaunchForm::start_requested);
  connect(sweep_, &QPushButton::clicked, this, &LaunchForm::sweep_requested);
  connect(pause_, &QPushButton::clicked, this, &LaunchForm::pause_requested);
  connect(resume_, &QPushButton::clicked, this, &LaunchForm::resume_requested);
  connect(stop_, &QPushButton::clicked, this, &LaunchForm::stop_requested);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = xmc::gui::existing_directory(this, "Dataset folder", dataset_->text());
    if (!dir.isEmpty()) set_dataset(dir);
  });
  connect(dataset_, &QLineEdit::editingFinished, this, [this] { show_dataset_summary(); });
  connect(dataset_, &QLineEdit::textChanged, this, [this] { validate(); });  // a typed path enables Start
  connect(presets_, &QComboBox::activated, this, [this](int index) { apply_preset(index); });
  load_presets(presets_dir);
  set_state(State::Idle);
  validate();
}

void LaunchForm::load_presets(const QString& dir) {
  presets_->addItem("(defaults)");
  preset_paths_ << QString();
  // The recommended starting points first (recommended-text.json: what measured best for a new text dataset on a
  // CPU), then the rest by name.
  QFileInfoList files = QDir(dir).entryInfoList({"*.json"}, QDir::Files, QDir::Name);
  // By the names shown: "dexml-bow-wordnet" before "dexml-bow-wordnet-all" (by file name ".json" sorts after "-all.json",
  // and typing a name into the box then chose the longer one).
  std::stable_sort(files.begin(), files.end(), [](const QFileInfo& a, const QFileInfo& b) { return a.completeBaseName() < b.completeBaseName(); });
  std::stable_partition(files.begin(), files.end(), [](const QFileInfo& file) { return file.completeBaseName().startsWith("recommended"); });
  for (const auto& file : files) {
    presets_->addItem(file.completeBaseName());
    preset_paths_ << file.absoluteFilePath();
  }
}

void LaunchForm::mark_preset(const QString& config_file) {
  const int index = static_cast<int>(preset_paths_.indexOf(QFileInfo(config_file).absoluteFilePath()));
  if (index > 0) presets_->setCurrentIndex(index);
}

void LaunchForm::apply_preset(int index) {
  if (index < 0 || index >= preset_paths_.size()) return;
  const QString dataset = dataset_->text();
  try {
    TrainConfig config = preset_paths_[index].isEmpty() ? TrainConfig{} : load_train_config(preset_paths_[index].toStdString());
    // A preset describes the method; keep the dataset the user chose.
    if (!dataset.isEmpty()) {
      config.dataset = dataset.toStdString();
    } else if (config.dataset.is_relative() && !std::filesystem::exists(config.dataset)) {
      // Presets name datasets relative to the project folder (datasets/demo/...), two levels above them.
      const QString root = QFileInfo(preset_paths_[index]).absoluteDir().absoluteFilePath("../..");
      const QString candidate = QDir::cleanPath(root + "/" + QString::fromStdString(config.dataset.string()));
      if (QFileInfo(candidate).isDir()) config.dataset = candidate.toStdString();
    }
    set_config(config);
  } catch (const std::exception& e) {
    error_->setText(QString::fromUtf8(e.what()));
  }
}

namespace {

/// What a preset's name can describe: the config less its name, its dataset, its seed and the machine's keys.
std::string described_settings(const TrainConfig& config) {
  nlohmann::json settings = nlohmann::json::parse(to_json(config));
  for (const char* key : {"name", "dataset", "seed", "device", "threads", "memory_mb", "prefetch"}) settings.erase(key);
  return settings.dump();
}

}  // namespace

void LaunchForm::set_config(const TrainConfig& config) {
  const auto values = nlohmann::json::parse(to_json(config));
  for (auto& [key, editor] : fields_) {
    const QString text = json_to_text(values.at(key));
    if (auto* combo = qobject_cast<QComboBox*>(editor)) select_in_combo(combo, text);
    else if (auto* line = qobject_cast<QLineEdit*>(editor)) line->setText(text);
  }
  name_from_config_ = QString::fromStdString(config.name);
  config_of_name_ = described_settings(config);
  method_shown_ = QString::fromStdString(config.method);
  if (!config.dataset.empty()) set_dataset(QString::fromStdString(config.dataset.string()));
  validate();
}

void LaunchForm::set_dataset(const QString& folder) {
  dataset_->setText(folder);
  show_dataset_summary();
  validate();
}

int LaunchForm::processes() const { return processes_->value(); }
void LaunchForm::set_processes(int processes) {
  processes_->setMaximum(std::max(processes_->maximum(), processes));  // more than the cores: allowed when asked for
  processes_->setValue(processes);
}

QString LaunchForm::dataset() const { return dataset_->text(); }

QString LaunchForm::field_text(const QString& key) const {
  const auto it = fields_.find(key.toStdString());
  if (it == fields_.end()) return key == "dataset" ? dataset_->text() : QString();
  if (auto* combo = qobject_cast<QComboBox*>(it->second)) {
    if (combo->isEditable()) return combo->currentText().section(QLatin1Char(' '), 0, 0);  // "12 — unidec zs base": the id
    return combo->currentData().isValid() ? combo->currentData().toString() : combo->currentText();
  }
  return qobject_cast<QLineEdit*>(it->second)->text();
}

void LaunchForm::set_field_text(const QString& key, const QString& text) {
  if (key == "dataset") return set_dataset(text);
  const auto it = fields_.find(key.toStdString());
  if (it == fields_.end()) return;
  if (auto* combo = qobject_cast<QComboBox*>(it->second)) select_in_combo(combo, text);
  else qobject_cast<QLineEdit*>(it->second)->setText(text);
}

TrainConfig LaunchForm::config() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& info : train_config_keys()) {
    if (info.key == "dataset") continue;
    const std::string text = field_text(QString::fromStdString(info.key)).trimmed().toStdString();
    if (info.type == "string" || info.type == "path") {
      j[info.key] = text;
    } else if (info.type == "int_list") {
      nlohmann::json list = nlohmann::json::parse("[" + text + "]", nullptr, false);
      if (list.is_discarded()) throw ConfigError(info.key + ": got \"" + text + "\", expected numbers separated by commas");
      j[info.key] = list;
    } else {
      nlohmann::json number = nlohmann::json::parse(text, nullptr, false);
      if (number.is_discarded() || !number.is_number())
        throw ConfigError(info.key + ": got \"" + text + "\", expected a number");
      j[info.key] = number;
    }
  }
  j["dataset"] = dataset_->text().trimmed().toStdString();
  return parse_train_config(j.dump(), "launch form");
}

void LaunchForm::show_applicable_keys() {
  // The chosen method, encoder, sampler, ... as a config (keys whose field does not parse keep defaults).
  TrainConfig chosen;
  for (const auto& info : train_config_keys()) {
    for (const KeyCondition& condition : key_conditions(info)) {
      try {
        apply_config_overrides(chosen, {condition.key + "=" + field_text(QString::fromStdString(condition.key)).toStdString()});
      } catch (const std::exception&) {
      }
    }
  }
  // The images.* keys act only on a dataset with image banks: shown for one, hidden otherwise.
  const bool dataset_has_images = Session::dataset_folder_has_images(dataset_->text().trimmed().toStdString());
  std::map<QFormLayout*, bool> group_shown;
  for (const auto& info : train_config_keys()) {
    const auto it = fields_.find(info.key);
    if (it == fields_.end()) continue;
    const bool shown = key_applies(info, chosen) && (info.key.rfind("images.", 0) != 0 || dataset_has_images);
    QFormLayout* layout = field_groups_.at(info.key);
    layout->setRowVisible(it->second, shown);
    group_shown[layout] = group_shown[layout] || shown;
  }
  for (const auto& [layout, shown] : group_shown) layout->parentWidget()->setVisible(shown);

  // A method that trains in one process (xrlinear's liblinear rankers; a run built on another, as IRENE's) cannot
  // be split across processes: the choice is held at 1 and says why, instead of failing at Start.
  const MethodInfo* method = find_method_info(chosen.method);
  const bool one_process = method != nullptr && (!method->trains_encoder || method->base_run);
  if (one_process) processes_->setValue(1);
  processes_->setEnabled(!one_process);
  processes_->setToolTip(one_process ? QString::fromStdString(chosen.method + " trains in one process")
                                     : QString("Train with this many processes on this machine (data-parallel on Gloo): each takes a share of every "
                                               "batch and of the cores, and the gradients are summed, so the run trains as one process would. "
                                               "Pausing holds every process."));
}

bool LaunchForm::field_shown(const QString& key) const {
  const auto it = fields_.find(key.toStdString());
  if (it == fields_.end()) return false;
  const QFormLayout* layout = field_groups_.at(it->first);
  return layout->isRowVisible(it->second) && !layout->parentWidget()->isHidden();
}

void LaunchForm::validate() {
  // A name that came with a preset or a loaded run ("unidec zs base") does not carry over to another method.
  if (const QString method = field_text(QStringLiteral("method")); method != method_shown_) {
    method_shown_ = method;
    Q_EMIT base_run_choices_needed();
    if (!name_from_config_.isEmpty() && field_text(QStringLiteral("name")) == name_from_config_) {
      name_from_config_.clear();
      set_field_text(QStringLiteral("name"), QString());  // validates again
      return;
    }
  }
  show_applicable_keys();
  try {
    const TrainConfig c = config();
    // Nor once its settings change: "…, 2 trees and 50 neighbours" would name a run of 1 tree (the default name then).
    if (!name_from_config_.isEmpty() && field_text(QStringLiteral("name")) == name_from_config_ && described_settings(c) != config_of_name_) {
      name_from_config_.clear();
      set_field_text(QStringLiteral("name"), QString());  // validates again
      return;
    }
    if (!c.dataset.empty()) xmc::validate(c);
    error_->clear();
    start_->setEnabled(!c.dataset.empty());
    sweep_->setEnabled(!c.dataset.empty());
  } catch (const std::exception& e) {
    error_->setText(QString::fromUtf8(e.what()));
    start_->setEnabled(false);
    sweep_->setEnabled(false);
  }
}

void LaunchForm::set_base_run_choices(const std::vector<std::pair<std::int64_t, QString>>& runs) {
  const QString key = field_text(QStringLiteral("method")) + QStringLiteral(".base_run");
  const auto it = fields_.find(key.toStdString());
  auto* combo = it == fields_.end() ? nullptr : qobject_cast<QComboBox*>(it->second);
  if (!combo || !combo->isEditable()) return;
  const QString current = field_text(key);
  const QSignalBlocker quiet(combo);
  combo->clear();
  for (const auto& [id, description] : runs) combo->addItem(QString::number(id) + QStringLiteral(" — ") + description, QString::number(id));
  const int index = combo->findData(current);
  if (index >= 0) combo->setCurrentIndex(index);
  else combo->setCurrentText(current == QLatin1String("0") && !runs.empty() ? combo->itemText(0) : current);  // unset: the newest
  combo->lineEdit()->setPlaceholderText(runs.empty() ? tr("no finished run to build on with this dataset yet") : tr("a run id"));
  combo->setToolTip(combo->toolTip().section(QStringLiteral("\n\nEligible"), 0, 0) +
                    (runs.empty() ? tr("\n\nEligible runs: none in this store for this dataset (a completed ngame or unidec run on the same zero-shot split)")
                                  : tr("\n\nEligible runs: %1 in this store").arg(runs.size())));
  validate();
}

void LaunchForm::show_dataset_summary() {
  const QString folder = dataset_->text().trimmed();
  if (folder.isEmpty()) return;
  Q_EMIT base_run_choices_needed();
  summary_->setPlainText("Reading " + folder + " …");
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, folder] {
    if (dataset_->text().trimmed() == folder) summary_->setPlainText(watcher->result());
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run([folder]() -> QString {
    try {
      return QString::fromStdString(to_text(Session::summarize_dataset_folder(folder.toStdString())));
    } catch (const std::exception& e) {
      return QString("Cannot read this dataset:\n") + QString::fromUtf8(e.what());
    }
  }));
}

void LaunchForm::set_state(State state) {
  start_->setVisible(state == State::Idle);
  sweep_->setVisible(state == State::Idle);
  pause_->setVisible(state == State::Running);
  resume_->setVisible(state == State::Paused);
  stop_->setVisible(state != State::Idle);
  for (auto& [key, editor] : fields_) editor->setEnabled(state == State::Idle);
  dataset_->setEnabled(state == State::Idle);
  presets_->setEnabled(state == State::Idle);
  if (state == State::Idle) validate();
}

QLabel* LaunchForm::label_of(const std::string& key) const {
  const auto field = fields_.find(key);
  const auto group = field_groups_.find(key);
  if (field == fields_.end() || group == field_groups_.end()) return nullptr;
  return qobject_cast<QLabel*>(group->second->labelForField(field->second));
}

void LaunchForm::show_chosen(const std::string& key, double value) {
  QLabel* label = label_of(key);
  if (label == nullptr) return;  // a key without a field of its own
  const QString plain = unchosen_labels_.try_emplace(key, label->text()).first->second;
  label->setText(QStringLiteral("%1 · chosen %2").arg(plain).arg(value, 0, 'g', 3));
  label->setStyleSheet(QStringLiteral("font-weight: bold"));
}

void LaunchForm::clear_chosen() {
  for (const auto& [key, text] : unchosen_labels_)
    if (QLabel* label = label_of(key)) {
      label->setText(text);
      label->setStyleSheet(QString());
    }
  unchosen_labels_.clear();
}

QString LaunchForm::field_label(const QString& key) const {
  const QLabel* label = label_of(key.toStdString());
  return label ? label->text() : QString();
}

}  // namespace xmc::gui
