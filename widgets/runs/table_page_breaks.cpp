#include "widgets/runs/table_page_breaks.h"

#include <QAbstractTextDocumentLayout>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextFrame>
#include <QTextTable>
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace xmc::gui {
namespace {

struct RowExtent {
  QTextTable* table = nullptr;
  int row = 0;
  double top = 0, bottom = 0;  // document coordinates
};

/// Every table of the document, depth first.
void collect_tables(QTextFrame* frame, std::vector<QTextTable*>& out) {
  for (QTextFrame* child : frame->childFrames()) {
    if (auto* table = qobject_cast<QTextTable*>(child)) out.push_back(table);
    collect_tables(child, out);
  }
}

std::vector<RowExtent> row_extents(QTextDocument& doc) {
  std::vector<QTextTable*> tables;
  collect_tables(doc.rootFrame(), tables);
  QAbstractTextDocumentLayout* layout = doc.documentLayout();
  std::vector<RowExtent> out;
  for (QTextTable* table : tables)
    for (int r = 0; r < table->rows(); ++r) {
      RowExtent e{table, r, 1e300, -1e300};
      for (int c = 0; c < table->columns(); ++c) {
        const QTextTableCell cell = table->cellAt(r, c);
        if (!cell.isValid() || cell.row() != r) continue;  // a cell spanning from a row above
        for (QTextFrame::iterator it = cell.begin(); !it.atEnd(); ++it) {
          const QTextBlock block = it.currentBlock();
          if (!block.isValid()) continue;
          const QRectF rect = layout->blockBoundingRect(block);
          e.top = std::min(e.top, rect.top());
          e.bottom = std::max(e.bottom, rect.bottom());
        }
      }
      if (e.bottom > e.top) out.push_back(e);
    }
  return out;
}

bool crosses(const RowExtent& e, double page) {
  return std::floor(e.top / page) != std::floor((e.bottom - 0.5) / page);
}

}  // namespace

int table_rows_split_across_pages(QTextDocument& doc) {
  const double page = doc.pageSize().height();
  if (!(page > 0)) return 0;
  int n = 0;
  for (const RowExtent& e : row_extents(doc))
    if (crosses(e, page) && e.bottom - e.top < page) ++n;
  return n;
}

void keep_table_rows_whole(QTextDocument& doc) {
  const double page = doc.pageSize().height();
  if (!(page > 0)) return;
  // One row at a time, from the top: moving a row shifts everything after it. A page break before the
  // first block of each of the row's cells moves the whole row (a top margin there is ignored by the layout).
  for (int pass = 0; pass < 10000; ++pass) {
    const auto rows = row_extents(doc);
    const auto split = std::find_if(rows.begin(), rows.end(), [&](const RowExtent& e) { return crosses(e, page) && e.bottom - e.top < page; });
    if (split == rows.end()) return;
    for (int c = 0; c < split->table->columns(); ++c) {
      const QTextTableCell cell = split->table->cellAt(split->row, c);
      if (!cell.isValid() || cell.row() != split->row) continue;
      QTextCursor cursor = cell.firstCursorPosition();
      QTextBlockFormat format = cursor.blockFormat();
      format.setPageBreakPolicy(QTextFormat::PageBreak_AlwaysBefore);
      cursor.setBlockFormat(format);
    }
  }
}

}  // namespace xmc::gui
