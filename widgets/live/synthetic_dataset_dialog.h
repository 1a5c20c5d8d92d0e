#pragma once
// The dialog a synthetic dataset (`xmc dataset build synthetic`) is set up in: a shape to start from (the LF sets'
// label and query counts), each count editable, topics and a seed. The sizes of LF-AmazonTitles-1.3M take minutes
// and gigabytes to write; the dialog says how many rows it will write.
#include <QDialog>

#include "engine/session/session.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace xmc::gui {

class SyntheticDatasetDialog : public QDialog {
 public:
  explicit SyntheticDatasetDialog(QWidget* parent = nullptr);

  /// Fills the fields from shape `index` of shape_names() (for tests, and the combo box).
  void choose_shape(int index);
  static QStringList shape_names();
  SyntheticBuildOptions options() const;

 private:
  void update_summary();

  QComboBox* shape_ = nullptr;
  QSpinBox* labels_ = nullptr;
  QSpinBox* train_ = nullptr;
  QSpinBox* test_ = nullptr;
  QDoubleSpinBox* labels_per_query_ = nullptr;
  QSpinBox* topics_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QLabel* summary_ = nullptr;
};

}  // namespace xmc::gui
