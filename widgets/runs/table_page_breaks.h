#pragma once
// Printed reports: Qt's text layout moves a table row to the next page only when every cell of it starts
// below the page's end, so a row with a wrapping cell (a long config value, a path, an error) is split
// across two pages. This pushes such rows down to the next page instead.
class QTextDocument;

namespace xmc::gui {

/// For a document with a page size set: every table row that would cross a page boundary (and fits on
/// one page) starts at the top of the next page. Rows taller than a page are left to split.
void keep_table_rows_whole(QTextDocument& doc);

/// Table rows of `doc` (as laid out now) that cross a page boundary, for tests: their count.
int table_rows_split_across_pages(QTextDocument& doc);

}  // namespace xmc::gui
