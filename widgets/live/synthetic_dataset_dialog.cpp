#include "widgets/live/synthetic_dataset_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QPushButton>
#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QSpinBox>
#include <QVBoxLayout>

namespace xmc::gui {
namespace {

/// Shapes to start from: the XC repository's LF sets (their label, training and test query counts and mean labels
/// a query) and a small one that builds in seconds. Topics: about one per 65 labels, as bench/cost_curve.sh uses.
struct Shape {
  const char* name;
  int labels, train, test;
  double labels_per_query;
  int topics;
};
constexpr Shape kShapes[] = {
    {"small (30k labels, seconds)", 30000, 52000, 10000, 5.0, 500},
    {"LF-AmazonTitles-131K", 131073, 294805, 134835, 2.3, 2000},
    {"LF-WikiSeeAlsoTitles-320K", 312330, 693082, 177515, 2.1, 5000},
    {"LF-AmazonTitles-1.3M", 1305265, 2248619, 970237, 22.2, 20000},
};

QSpinBox* count_box(int maximum) {
  auto* box = new QSpinBox;
  box->setRange(1, maximum);
  box->setGroupSeparatorShown(true);
  return box;
}

}  // namespace

QStringList SyntheticDatasetDialog::shape_names() {
  QStringList out;
  for (const Shape& s : kShapes) out << QString::fromLatin1(s.name);
  return out;
}

SyntheticDatasetDialog::SyntheticDatasetDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle("Build a synthetic dataset");
  auto* form = new QFormLayout;
  shape_ = new QComboBox;
  shape_->addItems(shape_names());
  labels_ = count_box(100000000);
  train_ = count_box(100000000);
  test_ = count_box(100000000);
  labels_per_query_ = new QDoubleSpinBox;
  labels_per_query_->setRange(1.0, 1000.0);
  labels_per_query_->setDecimals(1);
  topics_ = new QSpinBox;
  topics_->setRange(0, 100000000);
  topics_->setGroupSeparatorShown(true);
  seed_ = new QSpinBox;
  seed_->setRange(0, 1000000000);
  seed_->setValue(1);
  form->addRow("Shape", shape_);
  form->addRow("Labels", labels_);
  form->addRow("Training queries", train_);
  form->addRow("Test queries", test_);
  form->addRow("Labels a query (mean)", labels_per_query_);
  form->addRow("Topics (0 = none)", topics_);
  form->addRow("Seed", seed_);
  for (QWidget* w : {static_cast<QWidget*>(labels_), static_cast<QWidget*>(train_), static_cast<QWidget*>(test_), static_cast<QWidget*>(topics_),
                     static_cast<QWidget*>(seed_)})
    w->setToolTip("The same values and seed give the same files on every machine");
  topics_->setToolTip("Labels fall into this many topics that share words, as real ones do: approximate search needs such neighbourhoods");
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText("Build…");
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(summary_);
  layout->addWidget(buttons);
  connect(shape_, &QComboBox::currentIndexChanged, this, [this](int index) { choose_shape(index); });
  for (QSpinBox* box : {labels_, train_, test_}) connect(box, &QSpinBox::valueChanged, this, [this] { update_summary(); });
  choose_shape(0);
}

void SyntheticDatasetDialog::choose_shape(int index) {
  if (index < 0 || index >= static_cast<int>(std::size(kShapes))) return;
  const Shape& s = kShapes[index];
  if (shape_->currentIndex() != index) shape_->setCurrentIndex(index);
  labels_->setValue(s.labels);
  train_->setValue(s.train);
  test_->setValue(s.test);
  labels_per_query_->setValue(s.labels_per_query);
  topics_->setValue(s.topics);
  update_summary();
}

SyntheticBuildOptions SyntheticDatasetDialog::options() const {
  SyntheticBuildOptions o;
  o.labels = labels_->value();
  o.train = train_->value();
  o.test = test_->value();
  o.labels_per_query = labels_per_query_->value();
  o.topics = topics_->value();
  o.seed = static_cast<std::uint64_t>(seed_->value());
  return o;
}

void SyntheticDatasetDialog::update_summary() {
  const QLocale locale;
  const qint64 rows = static_cast<qint64>(labels_->value()) + train_->value() + test_->value();
  summary_->setText(QString("Writes %1 texts (labels, training and test queries) into the folder chosen next.%2")
                        .arg(locale.toString(rows))
                        .arg(rows > 1000000 ? " At this size that takes minutes and gigabytes of disk." : ""));
}

}  // namespace xmc::gui
