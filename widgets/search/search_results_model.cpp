#include "widgets/search/search_results_model.h"

#include <QColor>
#include <QFont>

#include "widgets/search/thumbnails.h"

namespace xmc::gui {
namespace {

const QColor kTruth(200, 240, 200);
const QColor kMissedTruth(228, 245, 228);
const QColor kAdded(205, 222, 250);
const QColor kSeparatorText(0x55, 0x55, 0x55);

}  // namespace

SearchResultsModel::SearchResultsModel(QObject* parent) : QAbstractTableModel(parent) {}

void SearchResultsModel::set_results(const std::vector<LabelScore>& top, const std::vector<std::pair<std::int64_t, LabelRank>>& missed_truth,
                                     const std::vector<std::string>& label_texts, const std::set<std::int64_t>& truth,
                                     const std::set<std::int64_t>& added) {
  beginResetModel();
  rows_.clear();
  num_ranked_ = static_cast<std::int64_t>(label_texts.size());
  for (std::size_t r = 0; r < top.size(); ++r) {
    const LabelScore& hit = top[r];
    rows_.push_back({RowKind::Top, static_cast<std::int64_t>(r + 1), hit.score, hit.label, QString::fromStdString(hit.text),
                     truth.count(hit.label) > 0, added.count(hit.label) > 0});
  }
  top_rows_ = static_cast<int>(rows_.size());
  if (!missed_truth.empty()) {
    Row separator;
    separator.kind = RowKind::Separator;
    separator.text = QString("ground truth below the top %1:").arg(top.size());
    rows_.push_back(separator);
    for (const auto& [label, where] : missed_truth) {
      const QString text = label >= 0 && label < num_ranked_ ? QString::fromStdString(label_texts[static_cast<std::size_t>(label)]) : QString();
      rows_.push_back({RowKind::MissedTruth, where.rank, where.score, label, text, true, added.count(label) > 0});
    }
  }
  endResetModel();
}

void SearchResultsModel::set_results_by_text(const std::vector<LabelScore>& top, const std::set<std::string>& truth_texts) {
  beginResetModel();
  rows_.clear();
  num_ranked_ = 0;
  for (std::size_t r = 0; r < top.size(); ++r) {
    const LabelScore& hit = top[r];
    rows_.push_back({RowKind::Top, static_cast<std::int64_t>(r + 1), hit.score, hit.label, QString::fromStdString(hit.text),
                     truth_texts.count(hit.text) > 0, false});
  }
  top_rows_ = static_cast<int>(rows_.size());
  endResetModel();
}

void SearchResultsModel::clear() {
  beginResetModel();
  rows_.clear();
  top_rows_ = 0;
  endResetModel();
}

void SearchResultsModel::set_label_images(std::shared_ptr<const std::vector<std::vector<std::string>>> files) {
  beginResetModel();
  label_images_ = std::move(files);
  endResetModel();
}

QStringList SearchResultsModel::top_texts() const {
  QStringList out;
  for (int r = 0; r < top_rows_; ++r) out << rows_[static_cast<std::size_t>(r)].text;
  return out;
}

int SearchResultsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int SearchResultsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant SearchResultsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const Row& row = rows_[static_cast<std::size_t>(index.row())];
  const int column = index.column();
  if (row.kind == RowKind::Separator) {
    if (role == Qt::DisplayRole) return column == kRank ? QStringLiteral("…") : column == kLabel ? row.text : QString();
    if (role == Qt::ForegroundRole) return kSeparatorText;
    return {};
  }
  switch (role) {
    case Qt::DisplayRole:
      if (column == kRank) return QString::number(row.rank);
      if (column == kScore) return QString::number(static_cast<double>(row.score), 'f', 4);
      return row.text;
    case Qt::TextAlignmentRole:
      return column == kLabel ? QVariant(Qt::AlignLeft | Qt::AlignVCenter) : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::BackgroundRole:
      if (row.kind == RowKind::MissedTruth) return kMissedTruth;
      if (row.truth) return kTruth;  // a true label that is also an added one shows as true
      if (row.added) return kAdded;
      return {};
    case Qt::FontRole:
      if (row.kind == RowKind::MissedTruth) {
        QFont italic;
        italic.setItalic(true);
        return italic;
      }
      return {};
    case Qt::ToolTipRole: {
      if (column != kLabel) return {};
      if (row.kind == RowKind::MissedTruth)
        return QString("ground truth, rank %1 of %2: %3").arg(row.rank).arg(num_ranked_).arg(row.text);
      QString tip = row.text;
      if (row.added) tip = "added label: " + tip;
      if (row.truth) tip = "ground truth: " + tip;
      return tip;
    }
    case Qt::DecorationRole: {
      if (column != kLabel || !label_images_ || row.label < 0 || row.label >= static_cast<std::int64_t>(label_images_->size())) return {};
      const auto& files = (*label_images_)[static_cast<std::size_t>(row.label)];
      if (files.empty()) return {};
      const QPixmap picture = thumbnail(QString::fromStdString(files.front()), kThumbnailSide);
      return picture.isNull() ? QVariant() : QVariant(picture);
    }
    case kLabelIdRole:
      return QVariant::fromValue<qint64>(row.label);
    default:
      return {};
  }
}

QVariant SearchResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case kRank: return QStringLiteral("#");
    case kScore: return QStringLiteral("score");
    case kLabel: return QStringLiteral("label");
    default: return {};
  }
}

}  // namespace xmc::gui
