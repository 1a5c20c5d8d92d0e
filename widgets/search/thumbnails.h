#pragma once
// Small pictures of a dataset's image files for the Search tab: decoded once, scaled to fit a square, and kept
// (at most a few hundred) so that scrolling results does not decode again. A file that cannot be read gives an
// empty pixmap (the row simply shows none); the GUI thread only, as QPixmap is.
#include <QPixmap>
#include <QString>

namespace xmc::gui {

QPixmap thumbnail(const QString& path, int side);

}  // namespace xmc::gui
