#pragma once
// The dialog a sweep is set up in: config keys (any the launch form has) each with a list of values, the
// number of runs the grid makes, and the sweep's name. The values are typed as on the command line
// ("0.001, 0.003"); a row that does not parse is named when OK is pressed and the dialog stays open.
#include <QDialog>
#include <vector>

#include "engine/session/session.h"

class QLabel;
class QLineEdit;
class QTableWidget;

namespace xmc::gui {

class SweepDialog : public QDialog {
 public:
  explicit SweepDialog(QWidget* parent = nullptr);

  /// Replaces the rows by these axes (for tests, and to prefill from a sweep).
  void set_axes(const std::vector<SweepAxis>& axes);
  /// The rows as axes; throws ConfigError naming the row that is wrong (unknown key, empty value, ...).
  std::vector<SweepAxis> axes() const;
  QString sweep_name() const;
  /// Runs the grid makes (0 when a row does not parse).
  int point_count() const;
  /// What is wrong with the rows, shown once Start was pressed on them and kept current as they are edited ("" when
  /// nothing is shown or they are right now).
  QString error_text() const;

  void accept() override;

 private:
  void add_row(const QString& key = {}, const QString& values = {});
  void update_count();

  QTableWidget* rows_ = nullptr;
  QLabel* count_ = nullptr;
  QLabel* error_ = nullptr;
  QLineEdit* name_ = nullptr;
  bool checks_as_typed_ = false;  ///< Start found a mistake: from then on the message follows the rows as they are edited
};

}  // namespace xmc::gui
