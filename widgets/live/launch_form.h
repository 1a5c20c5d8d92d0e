#pragma once
// The form that launches a training run: dataset folder (with its statistics), a preset, and every
// config key as a validated field with the key's description as tooltip; Start / Pause / Resume / Stop.
// The fields are generated from xmc::train_config_keys(), so the form always matches the engine: one box per
// option group, and only the keys that matter for the chosen method, encoder, sampler, negatives and loss.
#include <QWidget>
#include <map>

#include "engine/config/train_config.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QPlainTextEdit;
class QSpinBox;
class QFormLayout;

namespace xmc::gui {

class LaunchForm : public QWidget {
  Q_OBJECT
 public:
  /// @param presets_dir folder of *.json configs offered as presets (may not exist)
  explicit LaunchForm(const QString& presets_dir, QWidget* parent = nullptr);

  /// The config the form describes; throws xmc::ConfigError naming the key of the first bad field.
  TrainConfig config() const;
  /// Fills every field from `config` (e.g. a preset or --config).
  void set_config(const TrainConfig& config);
  void set_dataset(const QString& folder);
  /// Shows `config_file` as the chosen preset when it is one of the presets (else "(defaults)" stays).
  void mark_preset(const QString& config_file);
  QString dataset() const;
  /// Processes that train the run on this machine (data-parallel; 1 = this process alone).
  int processes() const;
  void set_processes(int processes);

  /// Buttons follow the run: idle (Start), running (Pause, Stop), paused (Resume, Stop).
  enum class State { Idle, Running, Paused };
  void set_state(State state);

  /// The value shown for `key` (tests and scripting).
  QString field_text(const QString& key) const;
  void set_field_text(const QString& key, const QString& text);
  /// The runs the chosen method's "<method>.base_run" field offers (IRENE's), as (id, description), newest
  /// first: its list, where the user can still type any id. An empty list says there is none to build on yet.
  /// Does nothing when the chosen method builds on no run.
  void set_base_run_choices(const std::vector<std::pair<std::int64_t, QString>>& runs);
  /// Whether `key`'s field is shown: false for keys of a method, encoder, sampler, ... not chosen.
  bool field_shown(const QString& key) const;
  /// A value the run started from this form chose for `key` while it trained (xrlinear.choose's n-grams, trees and
  /// weights; UniDEC's concat weight): said beside the key's field, "xrlinear.trees · chosen 3", until clear_chosen()
  /// (the next run), so the form shows what was used beside what was asked for.
  void show_chosen(const std::string& key, double value);
  void clear_chosen();
  /// The text of `key`'s label (tests).
  QString field_label(const QString& key) const;

 Q_SIGNALS:
  void start_requested();
  void sweep_requested();
  void pause_requested();
  void resume_requested();
  void stop_requested();
  /// The dataset or the method changed: the runs a base-run field offers may have too.
  void base_run_choices_needed();

 private:
  void load_presets(const QString& dir);
  void apply_preset(int index);
  void show_dataset_summary();
  void validate();
  void show_applicable_keys();
  QLabel* label_of(const std::string& key) const;  ///< `key`'s field label, or nullptr

  std::map<std::string, QWidget*> fields_;  ///< config key -> editor
  std::map<std::string, QFormLayout*> field_groups_;  ///< config key -> the group box layout holding its row
  std::map<std::string, QString> unchosen_labels_;  ///< config key -> its label's text before show_chosen()
  QLineEdit* dataset_ = nullptr;
  QPlainTextEdit* summary_ = nullptr;
  QComboBox* presets_ = nullptr;
  QSpinBox* processes_ = nullptr;
  QLabel* error_ = nullptr;
  QPushButton *start_ = nullptr, *pause_ = nullptr, *resume_ = nullptr, *stop_ = nullptr, *sweep_ = nullptr;
  QStringList preset_paths_;
  QString name_from_config_;  ///< the name a preset or loaded config put in the name field
  std::string config_of_name_;  ///< the settings that name describes (the config less its name, dataset and machine keys)
  QString method_shown_;      ///< the method the form was last validated for
};

}  // namespace xmc::gui
