#include "widgets/live/sweep_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "engine/core/error.h"

namespace xmc::gui {

SweepDialog::SweepDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Sweep"));
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(tr("The launch form's configuration is trained once for every combination of these values, each "
                              "combination a run of its own tagged sweep-ID (the Runs tab compares them). Values as on the "
                              "command line, separated by commas: 0.001, 0.003."));
  intro->setWordWrap(true);
  layout->addWidget(intro);
  rows_ = new QTableWidget(0, 2, this);
  rows_->setHorizontalHeaderLabels({tr("config key"), tr("values")});
  rows_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  rows_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  rows_->verticalHeader()->setVisible(false);
  layout->addWidget(rows_, 1);
  auto* row_buttons = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add a key"));
  auto* remove = new QPushButton(tr("Remove the key"));
  row_buttons->addWidget(add);
  row_buttons->addWidget(remove);
  row_buttons->addStretch();
  count_ = new QLabel;
  row_buttons->addWidget(count_);
  layout->addLayout(row_buttons);
  auto* form = new QFormLayout;
  name_ = new QLineEdit;
  name_->setPlaceholderText(tr("default: the config's name over the keys"));
  form->addRow(tr("Sweep name"), name_);
  layout->addLayout(form);
  error_ = new QLabel;
  error_->setStyleSheet(QStringLiteral("color: #b00020"));
  error_->setWordWrap(true);
  layout->addWidget(error_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Start the sweep"));
  layout->addWidget(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &SweepDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &SweepDialog::reject);
  connect(add, &QPushButton::clicked, this, [this] { add_row(); });
  connect(remove, &QPushButton::clicked, this, [this] {
    if (rows_->currentRow() >= 0) rows_->removeRow(rows_->currentRow());
    update_count();
  });
  connect(rows_, &QTableWidget::itemChanged, this, [this] { update_count(); });
  add_row(QStringLiteral("lr"), QStringLiteral("0.001, 0.003"));
  resize(620, 360);
}

void SweepDialog::add_row(const QString& key, const QString& values) {
  const int row = rows_->rowCount();
  rows_->insertRow(row);
  auto* keys = new QComboBox;
  keys->setEditable(true);
  for (const auto& info : train_config_keys())
    if (info.key != "dataset") keys->addItem(QString::fromStdString(info.key));
  keys->setCurrentText(key);
  connect(keys, &QComboBox::currentTextChanged, this, [this] { update_count(); });
  rows_->setCellWidget(row, 0, keys);
  rows_->setItem(row, 1, new QTableWidgetItem(values));
  update_count();
}

void SweepDialog::set_axes(const std::vector<SweepAxis>& axes) {
  rows_->setRowCount(0);
  for (const auto& axis : axes) {
    QStringList values;
    for (const auto& v : axis.values) values << QString::fromStdString(v);
    add_row(QString::fromStdString(axis.key), values.join(QStringLiteral(", ")));
  }
  update_count();
}

std::vector<SweepAxis> SweepDialog::axes() const {
  std::vector<SweepAxis> out;
  for (int r = 0; r < rows_->rowCount(); ++r) {
    const auto* keys = qobject_cast<QComboBox*>(rows_->cellWidget(r, 0));
    const QString key = keys ? keys->currentText().trimmed() : QString();
    const QString values = rows_->item(r, 1) ? rows_->item(r, 1)->text().trimmed() : QString();
    if (key.isEmpty() && values.isEmpty()) continue;  // an empty row is no row
    out.push_back(parse_sweep_axis((key + QLatin1Char('=') + values).toStdString()));
    for (const auto& value : out.back().values) {  // an unknown key or a value it cannot take, named now
      TrainConfig probe;
      apply_config_overrides(probe, {out.back().key + "=" + value});
    }
  }
  if (out.empty()) throw ConfigError("give at least one key with its values");
  sweep_points(out);  // a key twice, or too many points
  return out;
}

QString SweepDialog::sweep_name() const { return name_->text().trimmed(); }

int SweepDialog::point_count() const {
  try {
    return static_cast<int>(sweep_points(axes()).size());
  } catch (const std::exception&) {
    return 0;
  }
}

QString SweepDialog::error_text() const { return error_->text(); }

void SweepDialog::update_count() {
  int n = 0;
  QString problem;
  try {
    n = static_cast<int>(sweep_points(axes()).size());
  } catch (const std::exception& e) {
    problem = QString::fromUtf8(e.what());
  }
  count_->setText(n > 0 ? tr("%n run(s)", nullptr, n) : tr("—"));
  // Once Start found a mistake, the message holds only while one does: the row fixed clears it, another replaces it.
  if (checks_as_typed_) error_->setText(problem);
}

void SweepDialog::accept() {
  try {
    axes();
  } catch (const std::exception& e) {
    error_->setText(QString::fromUtf8(e.what()));
    checks_as_typed_ = true;
    return;
  }
  QDialog::accept();
}

}  // namespace xmc::gui
